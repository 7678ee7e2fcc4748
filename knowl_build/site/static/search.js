/* knowl site search: offline, no server. See knowl_build/site/search.py for the data files.
 *
 * A query is analysed as the index was (index/analysis.py): runs of letters and digits,
 * lowercased, Porter-stemmed exactly as Whoosh's whoosh.lang.porter.stem does (its quirks
 * included). Only the shards of the query's terms are fetched, then the chunks of the results
 * shown. Scores are BM25F as index/ranking.py computes them, in the same order of additions;
 * a page named as the query (its title, file name or an alias) comes first, as there. Each
 * result shown gets its passage (reader/passages.py's choice, from the page's text file): the
 * header's box shows the first results as one types, search.html all of them.
 * Page text is only ever set with textContent: nothing from the index is parsed as HTML.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  var ROOT = new URL("../", script ? script.src : document.baseURI);
  var DATA = new URL("search/", ROOT);
  var PAGE_SIZE = 20;

  // --- Whoosh's Porter stemmer (whoosh/lang/porter.py), rule for rule -----------------------
  // Its `re.match` anchors at the start only: `(at|bl|iz)$` and `([^aeiouylsz])\1$` match a
  // whole word there, which the patterns below reproduce with `^`.

  var STEP2 = {
    ational: "ate", tional: "tion", enci: "ence", anci: "ance", izer: "ize", bli: "ble",
    alli: "al", entli: "ent", eli: "e", ousli: "ous", ization: "ize", ation: "ate",
    ator: "ate", alism: "al", iveness: "ive", fulness: "ful", ousness: "ous", aliti: "al",
    iviti: "ive", biliti: "ble", logi: "log"
  };
  var STEP3 = { icate: "ic", ative: "", alize: "al", iciti: "ic", ical: "ic", ful: "", ness: "" };
  var C = "[^aeiouy]+";
  var V = "[aeiou]+";
  var MGR0 = new RegExp("^(" + C + ")?" + V + C, "u");
  var MEQ1 = new RegExp("^(" + C + ")?" + V + C + "(" + V + ")?$", "u");
  var MGR1 = new RegExp("^(" + C + ")?" + V + C + V + C, "u");
  var S_V = new RegExp("^(" + C + ")?[aeiouy]", "u");
  var C_V = new RegExp("^" + C + "[aeiouy][^aeiouwxy]$", "u");
  var ED_ING = /^(.*)(ed|ing)$/u;
  var AT_BL_IZ = /^(at|bl|iz)$/u;
  var DOUBLE = /^([^aeiouylsz])\1$/u;
  var RE2 = /^(.+?)(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness|fulness|ousness|aliti|iviti|biliti|logi)$/u;
  var RE3 = /^(.+?)(icate|ative|alize|iciti|ical|ful|ness)$/u;
  var RE4_1 = /^(.+?)(al|ance|ence|er|ic|able|ible|ant|ement|ment|ent|ou|ism|ate|iti|ous|ive|ize)$/u;
  var RE4_2 = /^(.+?)(s|t)(ion)$/u;
  var RE5 = /^(.+?)e$/u;

  function chars(w) { return Array.from(w); } // code points, as Python indexes a str

  function dropLast(w) { var c = chars(w); c.pop(); return c.join(""); }

  function stem(w) {
    var c = chars(w);
    if (c.length < 3) return w;
    var firstIsY = c[0] === "y";
    if (firstIsY) w = "Y" + c.slice(1).join("");
    var m, s;
    // Step 1a
    if (w.endsWith("s")) {
      if (w.endsWith("sses")) w = w.slice(0, -2);
      else if (w.endsWith("ies")) w = w.slice(0, -2);
      else if (chars(w).slice(-2)[0] !== "s") w = w.slice(0, -1);
    }
    // Step 1b
    if (w.endsWith("eed")) {
      if (MGR0.test(w.slice(0, -3))) w = w.slice(0, -1);
    } else {
      m = ED_ING.exec(w);
      if (m && S_V.test(m[1])) {
        w = m[1];
        if (AT_BL_IZ.test(w)) w += "e";
        else if (DOUBLE.test(w)) w = dropLast(w);
        else if (C_V.test(w)) w += "e";
      }
    }
    // Step 1c
    if (w.endsWith("y")) {
      s = w.slice(0, -1);
      if (S_V.test(s)) w = s + "i";
    }
    // Step 2
    m = RE2.exec(w);
    if (m && MGR0.test(m[1])) w = m[1] + STEP2[m[2]];
    // Step 3
    m = RE3.exec(w);
    if (m && MGR0.test(m[1])) w = m[1] + STEP3[m[2]];
    // Step 4
    m = RE4_1.exec(w);
    if (m) {
      if (MGR1.test(m[1])) w = m[1];
    } else {
      m = RE4_2.exec(w);
      if (m && MGR1.test(m[1] + m[2])) w = m[1] + m[2];
    }
    // Step 5
    m = RE5.exec(w);
    if (m) {
      s = m[1];
      if (MGR1.test(s) || (MEQ1.test(s) && !C_V.test(s))) w = s;
    }
    if (w.endsWith("ll") && MGR1.test(w)) w = w.slice(0, -1);
    if (firstIsY) w = "y" + chars(w).slice(1).join("");
    return w;
  }

  // `[^\W_]+` of Python's re: letters and numbers. Then lowercased and stemmed; duplicates
  // removed, order kept (index/analysis.py's query_terms).
  var TOKEN = /[\p{L}\p{N}]+/gu;

  function terms(text) {
    var seen = Object.create(null);
    var out = [];
    (String(text).match(TOKEN) || []).forEach(function (token) {
      var term = stem(token.toLowerCase());
      if (!seen[term]) { seen[term] = true; out.push(term); }
    });
    return out;
  }

  // index/fields.py's name_key: accents dropped (NFKD without its marks), lowercased, the runs
  // of letters and digits joined by one space. A query equal to a page's name puts it first.
  function nameKey(text) {
    var bare = String(text).normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
    return (bare.match(TOKEN) || []).join(" ");
  }

  // The documents named `key` are "=" + key (no term holds a "=") in the shard of the first
  // term of `key`: the query's own first term, but for its accents.
  var NAMED = "=";

  function nameShard(m, name) { return shardOf(m, terms(name)[0]); }

  function fnv1a32(text) {
    var bytes = new TextEncoder().encode(text);
    var h = 0x811c9dc5;
    for (var i = 0; i < bytes.length; i++) {
      h ^= bytes[i];
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }

  // --- the data ----------------------------------------------------------------------------

  var cache = Object.create(null);

  function getJSON(path, fresh) {
    var key = path + (fresh ? "?" : "");
    if (!cache[key]) {
      cache[key] = fetch(new URL(path, DATA), fresh ? { cache: "no-cache" } : {}).then(
        function (response) {
          if (!response.ok) throw new Error(path + ": HTTP " + response.status);
          return response.json();
        }
      );
      cache[key].catch(function () { delete cache[key]; });
    }
    return cache[key];
  }

  function meta() { return getJSON("meta.json", true); }

  function shardOf(m, term) {
    return "terms/" + m.shards[fnv1a32(term) % m.shards.length] + ".json";
  }

  /* Every matching result's score, best first: the documents named as the query first, then by
   * score (ties by document number: by page id). */
  function rank(m, queryTerms, name) {
    var needed = {};
    queryTerms.forEach(function (t) { needed[shardOf(m, t)] = true; });
    if (name) needed[nameShard(m, name)] = true;
    return Promise.all(Object.keys(needed).map(function (p) {
      return getJSON(p).then(function (shard) { return [p, shard]; });
    })).then(function (loaded) {
      var shards = {};
      loaded.forEach(function (pair) { shards[pair[0]] = pair[1]; });
      var acc = new Map();
      var k1 = m.k1, b = m.b, n = Math.max(m.doc_count, 1);
      for (var f = 0; f < m.fields.length; f++) {
        var avg = m.avg_lengths[f];
        for (var q = 0; q < queryTerms.length; q++) {
          var entry = shards[shardOf(m, queryTerms[q])][queryTerms[q]];
          if (!entry) continue;
          var df = entry[0][f];
          if (!df) continue;
          var idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
          var weight = m.boosts[f] * idf * (k1 + 1);
          var postings = entry[1 + f];
          var doc = 0;
          for (var i = 0; i < postings.length; i += 3) {
            doc += postings[i];
            var tf = postings[i + 1];
            var norm = k1 * (1 - b + b * postings[i + 2] / avg);
            acc.set(doc, (acc.get(doc) || 0) + weight * tf / (tf + norm));
          }
        }
      }
      var named = new Set();
      var docs = name ? shards[nameShard(m, name)][NAMED + name] : null;
      if (docs) {
        var at = 0;
        for (var j = 0; j < docs.length; j++) {
          at += docs[j];
          named.add(at);
          if (!acc.has(at)) acc.set(at, 0); // named, though no term matches it (accents)
        }
      }
      var hits = Array.from(acc, function (pair) {
        return { doc: pair[0], score: pair[1], named: named.has(pair[0]) };
      });
      hits.sort(function (x, y) {
        return (y.named - x.named) || y.score - x.score || x.doc - y.doc;
      });
      return hits;
    });
  }

  function describe(m, hits) {
    var chunks = {};
    hits.forEach(function (h) { chunks[Math.floor(h.doc / m.chunk)] = true; });
    return Promise.all(Object.keys(chunks).map(function (c) {
      return getJSON("docs/" + m.chunks[c] + ".json").then(function (rows) { return [c, rows]; });
    })).then(function (loaded) {
      var rows = {};
      loaded.forEach(function (pair) { rows[pair[0]] = pair[1]; });
      return hits.map(function (h) {
        var row = rows[Math.floor(h.doc / m.chunk)][h.doc % m.chunk];
        return {
          href: row[0], title: row[1], summary: row[2], freshness: row[3], drift: row[4],
          text: row[5], score: h.score
        };
      });
    });
  }

  // --- the passage (reader/passages.py, step for step) ---------------------------------------

  var PASSAGE_CHARS = 240;

  /* A row's matched words: [start, end) of each token whose term is a query term. */
  function matchLine(text, wanted, heading) {
    var spans = [];
    var found = new Set();
    for (var m of String(text).matchAll(TOKEN)) {
      var term = stem(m[0].toLowerCase());
      if (wanted.has(term)) {
        spans.push([m.index, m.index + m[0].length]);
        found.add(term);
      }
    }
    return { text: text, spans: spans, terms: found, heading: heading };
  }

  /* At most PASSAGE_CHARS of the line, from a little before its first match (passages._cut). */
  function cut(text, matches) {
    text = text.replace(/\s+$/u, "");
    var start = text.length - text.replace(/^\s+/u, "").length;
    if (matches.length && matches[0][0] - start > Math.floor(PASSAGE_CHARS / 3)) {
      var before = matches[0][0] - Math.floor(PASSAGE_CHARS / 6);
      start = Math.max(start, text.lastIndexOf(" ", before - 1) + 1);
    }
    var end = Math.min(text.length, start + PASSAGE_CHARS);
    var prefix = start > 0 && text.slice(0, start).trim() ? "…" : "";
    var suffix = end < text.length ? "…" : "";
    var shift = prefix.length - start;
    var kept = matches.filter(function (ab) { return ab[0] >= start && ab[1] <= end; })
      .map(function (ab) { return [ab[0] + shift, ab[1] + shift]; });
    return { text: prefix + text.slice(start, end) + suffix, matches: kept };
  }

  /* The best-matching section of a page's text (search.py's `sections`: the lines before the
   * first heading, then each heading's) and its line with most of the query's terms; null when
   * none has one. {heading, anchor} of the section (null before the first heading), {text,
   * matches} of the passage. */
  function passage(sections, queryTerms) {
    var wanted = new Set(queryTerms);
    var best = null;
    if (!Array.isArray(sections)) return null;
    sections.forEach(function (section, number) {
      if (!Array.isArray(section)) return;
      var rows = [];
      if (number > 0) rows.push(matchLine(String(section[0]), wanted, true));
      for (var i = 2; i < section.length; i++) rows.push(matchLine(String(section[i]), wanted, false));
      var all = new Set();
      rows.forEach(function (row) { row.terms.forEach(function (t) { all.add(t); }); });
      if (!all.size || (best && all.size <= best.count)) return;
      var top = null;
      rows.forEach(function (row) {
        if (!top || row.terms.size > top.terms.size ||
            (row.terms.size === top.terms.size && top.heading && !row.heading)) top = row;
      });
      best = { count: all.size, number: number, top: top };
    });
    if (!best) return null;
    var section = best.number > 0 ? sections[best.number] : null;
    return {
      section: section ? { heading: String(section[0]), anchor: String(section[1]) } : null,
      snippet: cut(best.top.text, best.top.spans)
    };
  }

  /* Each result with its `section` and `snippet` (null when only its summary or tags matched),
   * from its text file: fetched for the results shown only. */
  function attachPassages(results, queryTerms) {
    return Promise.all(results.map(function (r) {
      if (typeof r.text !== "string" || !/^[0-9a-f]{16}$/.test(r.text)) {
        r.section = null; r.snippet = null;
        return r;
      }
      return getJSON("text/" + r.text + ".json").then(function (sections) {
        var found = passage(sections, queryTerms);
        r.section = found ? found.section : null;
        r.snippet = found ? found.snippet : null;
        return r;
      });
    }));
  }

  /* Results for `text`: {total, results (the first `limit`, described, with their passages
   * unless `options.passages` is false)}. */
  function search(text, limit, options) {
    var withPassages = !options || options.passages !== false;
    return meta().then(function (m) {
      var queryTerms = terms(text);
      if (!queryTerms.length) return { total: 0, results: [] };
      return rank(m, queryTerms, nameKey(text)).then(function (hits) {
        return describe(m, hits.slice(0, limit || PAGE_SIZE)).then(function (results) {
          return withPassages ? attachPassages(results, queryTerms) : results;
        }).then(function (results) {
          return { total: hits.length, results: results };
        });
      });
    });
  }

  // --- the page ------------------------------------------------------------------------------

  /* A result's link, only ever a page of this site. */
  function siteURL(href) {
    var url = new URL(href, ROOT);
    return url.href.indexOf(ROOT.href) === 0 ? url.href : null;
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /* The passage as text nodes, its matched words in <mark>: never parsed as HTML. */
  function marked(snippet, tag, className) {
    var node = el(tag, className);
    var text = String(snippet.text);
    var at = 0;
    (Array.isArray(snippet.matches) ? snippet.matches : []).forEach(function (ab) {
      var a = ab[0], b = ab[1];
      if (!(a >= at && b > a && b <= text.length)) return;
      if (a > at) node.appendChild(document.createTextNode(text.slice(at, a)));
      node.appendChild(el("mark", null, text.slice(a, b)));
      at = b;
    });
    if (at < text.length) node.appendChild(document.createTextNode(text.slice(at)));
    return node;
  }

  /* A link to the result's section (the heading its passage is under), or null. */
  function sectionLink(r, href) {
    if (!r.section || !r.section.heading) return null;
    var link = el(href ? "a" : "span", "search-section", r.section.heading);
    if (href) {
      var url = new URL(href);
      url.hash = r.section.anchor;
      link.href = url.href;
    }
    return link;
  }

  function resultItem(r) {
    var li = el("li", "search-result");
    var heading = el("p", "search-result-title");
    var href = siteURL(r.href);
    var link = el(href ? "a" : "span", null, r.title);
    if (href) link.href = href;
    heading.appendChild(link);
    var state = r.drift ? "drifted" : r.freshness;
    if (state && state !== "fresh") {
      heading.appendChild(document.createTextNode(" "));
      heading.appendChild(el("span", "badge badge-" + (r.drift ? "drift" : "stale"),
        state.replace(/_/g, " ")));
    }
    li.appendChild(heading);
    var where = sectionLink(r, href);
    if (where) li.appendChild(el("p", "search-result-section")).appendChild(where);
    if (r.snippet) li.appendChild(marked(r.snippet, "p", "search-result-snippet"));
    else if (r.summary) li.appendChild(el("p", "search-result-summary", r.summary));
    li.appendChild(el("p", "search-result-freshness", "Freshness: " + r.freshness.replace(/_/g, " ") +
      (r.drift ? " (a definition it uses has changed)" : "")));
    return li;
  }

  function links(list) { return Array.from(list.querySelectorAll(".search-result-title a")); }

  function setupSearchPage(input, list) {
    var status = document.getElementById("search-status");
    if (!status) {
      status = el("p");
      status.id = "search-status";
      list.parentNode.insertBefore(status, list);
    }
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    var more = el("button", "search-more", "More results");
    more.type = "button";
    more.hidden = true;
    list.parentNode.insertBefore(more, list.nextSibling);

    var shown = PAGE_SIZE;
    var latest = 0;
    var timer = null;

    function run(keepURL) {
      var text = input.value.trim();
      var ticket = ++latest;
      if (!keepURL) {
        var url = new URL(window.location.href);
        if (text) url.searchParams.set("q", text); else url.searchParams.delete("q");
        window.history.replaceState(null, "", url.href);
      }
      if (!text) {
        list.replaceChildren();
        status.textContent = "";
        more.hidden = true;
        return Promise.resolve();
      }
      status.textContent = "Searching…";
      return search(text, shown).then(function (found) {
        if (ticket !== latest) return;
        list.replaceChildren.apply(list, found.results.map(resultItem));
        status.textContent = found.total === 0 ? "No page matches “" + text + "”." :
          found.total + (found.total === 1 ? " page matches" : " pages match") +
          " “" + text + "”" +
          (found.total > found.results.length ? "; the first " + found.results.length + " are shown." : ".");
        more.hidden = found.total <= found.results.length;
        document.documentElement.dataset.searchState = "done";
      }, function (error) {
        if (ticket !== latest) return;
        status.textContent = window.location.protocol === "file:" ?
          "Search needs the site served over HTTP (for example `python -m http.server` in its " +
          "folder): browsers do not let a page read the index from file://." :
          "The search index could not be loaded (" + error.message + ").";
        document.documentElement.dataset.searchState = "error";
      });
    }

    more.addEventListener("click", function () {
      var focused = links(list).length;
      shown += PAGE_SIZE;
      run(true).then(function () {
        var all = links(list);
        if (all[focused]) all[focused].focus();
      });
    });

    input.addEventListener("input", function () {
      shown = PAGE_SIZE;
      clearTimeout(timer);
      timer = setTimeout(function () { run(false); }, 120);
    });

    var form = input.form;
    if (form) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        clearTimeout(timer);
        run(false);
      });
    }

    // Arrow keys: from the box into the results and between them; Escape or Up from the first
    // result back to the box. Enter on a result follows its link (the browser's own).
    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown") {
        var first = links(list)[0];
        if (first) { event.preventDefault(); first.focus(); }
      } else if (event.key === "Enter" && !form) {
        event.preventDefault();
        clearTimeout(timer);
        run(false);
      }
    });
    list.addEventListener("keydown", function (event) {
      var all = links(list);
      var at = all.indexOf(document.activeElement);
      if (at < 0) return;
      var to = null;
      if (event.key === "ArrowDown") to = Math.min(at + 1, all.length - 1);
      else if (event.key === "ArrowUp") to = at - 1;
      else if (event.key === "Home") to = 0;
      else if (event.key === "End") to = all.length - 1;
      else if (event.key === "Escape") to = -1;
      if (to === null) return;
      event.preventDefault();
      if (to < 0) input.focus(); else all[to].focus();
    });

    // The statistics and shard names (a few kB), fetched while the reader types.
    meta().catch(function () { /* reported by the first query */ });
    var q = new URL(window.location.href).searchParams.get("q");
    if (q) {
      input.value = q;
      run(true);
    } else {
      document.documentElement.dataset.searchState = "idle";
    }
  }

  // --- results as you type, under the header's box ------------------------------------------

  var SUGGESTED = 8;

  function optionItem(r, number) {
    var li = el("li", "search-option");
    li.id = "site-search-option-" + number;
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    var href = siteURL(r.href);
    if (href) li.dataset.href = href;
    var title = el(href ? "a" : "span", "search-option-title", r.title);
    if (href) { title.href = href; title.tabIndex = -1; }
    li.appendChild(title);
    var where = sectionLink(r, href);
    if (where) {
      where.tabIndex = -1;
      li.appendChild(document.createTextNode(" "));
      li.appendChild(where);
    }
    if (r.snippet) li.appendChild(marked(r.snippet, "p", "search-option-snippet"));
    else if (r.summary) li.appendChild(el("p", "search-option-summary", r.summary));
    return li;
  }

  /* The header's box (every page): a panel of the first results, updated as the reader types
   * (debounced); Up and Down move through them, Enter opens the one selected (or, with none
   * selected, the full results page: the form's own submit), Escape closes the panel. */
  function setupSuggestions(box) {
    var form = box.form;
    if (!form) return;
    var panel = el("div", "search-panel");
    panel.id = "site-search-panel";
    panel.hidden = true;
    var status = el("p", "search-panel-status");
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    var list = el("ul", "search-options");
    list.id = "site-search-options";
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Results");
    var all = el("a", "search-panel-all", "All results");
    panel.append(status, list, all);
    form.appendChild(panel);
    box.setAttribute("autocomplete", "off");
    box.setAttribute("role", "combobox");
    box.setAttribute("aria-autocomplete", "list");
    box.setAttribute("aria-controls", list.id);
    box.setAttribute("aria-expanded", "false");

    var latest = 0;
    var timer = null;
    var selected = -1;

    function options() { return Array.from(list.children); }

    function select(to) {
      var items = options();
      selected = items.length ? Math.max(-1, Math.min(to, items.length - 1)) : -1;
      items.forEach(function (item, n) {
        item.setAttribute("aria-selected", n === selected ? "true" : "false");
        item.classList.toggle("is-selected", n === selected);
      });
      if (selected >= 0) {
        box.setAttribute("aria-activedescendant", items[selected].id);
        items[selected].scrollIntoView({ block: "nearest" });
      } else {
        box.removeAttribute("aria-activedescendant");
      }
    }

    function open(on) {
      panel.hidden = !on;
      box.setAttribute("aria-expanded", on ? "true" : "false");
      if (!on) select(-1);
    }

    function run() {
      var text = box.value.trim();
      var ticket = ++latest;
      if (!text) {
        list.replaceChildren();
        open(false);
        return;
      }
      var page = new URL(form.getAttribute("action") || "search.html", window.location.href);
      page.searchParams.set("q", text);
      all.href = page.href;
      search(text, SUGGESTED).then(function (found) {
        if (ticket !== latest) return;
        list.replaceChildren.apply(list, found.results.map(optionItem));
        status.textContent = found.total === 0 ? "No page matches “" + text + "”." :
          found.total + (found.total === 1 ? " page matches." : " pages match.");
        all.hidden = found.total <= found.results.length;
        select(-1);
        open(document.activeElement === box || panel.contains(document.activeElement));
        panel.dataset.state = "done";
      }, function (error) {
        if (ticket !== latest) return;
        list.replaceChildren();
        status.textContent = window.location.protocol === "file:" ?
          "Search needs the site served over HTTP." :
          "The search index could not be loaded (" + error.message + ").";
        all.hidden = true;
        open(true);
        panel.dataset.state = "error";
      });
    }

    box.addEventListener("input", function () {
      clearTimeout(timer);
      panel.dataset.state = "busy";
      timer = setTimeout(run, 120);
    });
    box.addEventListener("focus", function () {
      meta().catch(function () { /* reported by the first query */ });
      if (box.value.trim() && list.children.length) open(true);
    });
    box.addEventListener("keydown", function (event) {
      var items = options();
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (panel.hidden) {
          if (!items.length) return;
          open(true);
        }
        event.preventDefault();
        if (event.key === "ArrowDown") select(selected + 1 >= items.length ? 0 : selected + 1);
        else select(selected <= 0 ? items.length - 1 : selected - 1);
      } else if (event.key === "Enter") {
        if (!panel.hidden && selected >= 0 && items[selected].dataset.href) {
          event.preventDefault();
          window.location.href = items[selected].dataset.href;
        }
      } else if (event.key === "Escape") {
        if (!panel.hidden) {
          event.preventDefault();
          open(false);
        }
      }
    });
    // Closed when the focus leaves the form (a click on a result keeps it until it opens).
    form.addEventListener("focusout", function (event) {
      if (!event.relatedTarget || !form.contains(event.relatedTarget)) open(false);
    });
    list.addEventListener("mousemove", function (event) {
      var item = event.target.closest ? event.target.closest(".search-option") : null;
      if (item) select(options().indexOf(item));
    });
  }

  function setup() {
    var input = document.getElementById("search-query");
    var list = document.getElementById("search-results");
    if (input && list) setupSearchPage(input, list);
    var header = document.getElementById("site-search");
    if (header) setupSuggestions(header);
    // `/` focuses the search box, as on most documentation sites.
    document.addEventListener("keydown", function (event) {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
      var target = event.target;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      var box = input || document.getElementById("site-search");
      if (box) { event.preventDefault(); box.focus(); }
    });
  }

  window.knowlSearch = {
    stem: stem, terms: terms, nameKey: nameKey, fnv1a32: fnv1a32, search: search,
    passage: passage
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
