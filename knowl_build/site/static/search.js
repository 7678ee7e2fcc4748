/* knowl site search: offline, no server. See knowl_build/site/search.py for the data files.
 *
 * A query is analysed as the index was (index/analysis.py): runs of letters and digits,
 * lowercased, Porter-stemmed exactly as Whoosh's whoosh.lang.porter.stem does (its quirks
 * included). Only the shards of the query's terms are fetched, then the chunks of the results
 * shown. Scores are BM25F as index/ranking.py computes them, in the same order of additions;
 * a page named as the query (its title, file name or an alias) comes first, as there. Each
 * result shown gets its passage (reader/passages.py's choice, from the text in its file): the
 * header's box shows the first results as one types, search.html all of them.
 * Page text is only ever set with textContent: nothing from the index is parsed as HTML.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  var ROOT = new URL("../", script ? script.src : document.baseURI);
  var DATA = new URL("search/", ROOT);
  var PAGE_SIZE = 10;

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

  // index/fields.py's STOP_WORDS and content_terms: the terms a query is scored with leave
  // out English stop words when at least MIN_CONTENT_WORDS distinct other terms are left.
  var STOP_WORDS = new Set(("a an and are as at be but by for if in into is it no not of on or " +
    "such that the their then there these they this to was will with").split(" "));
  var MIN_CONTENT_WORDS = 2;

  function scoredTerms(text) {
    var lowered = (String(text).match(TOKEN) || []).map(function (t) { return t.toLowerCase(); });
    var kept = lowered.filter(function (t) { return !STOP_WORDS.has(t); });
    if (new Set(kept.map(stem)).size < MIN_CONTENT_WORDS) kept = lowered;
    return terms(kept.join(" "));
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
    return "terms/" + m.shards[fnv1a32(term) % m.shards.length] + ".bin";
  }

  /* A term file (site/shards.py): {lengths, terms: its JSON part, blob: the postings' bytes}. */
  function getShard(path) {
    if (!cache[path]) {
      cache[path] = fetch(new URL(path, DATA)).then(function (response) {
        if (!response.ok) throw new Error(path + ": HTTP " + response.status);
        return response.arrayBuffer();
      }).then(function (buffer) {
        var bytes = new Uint8Array(buffer);
        var size = new DataView(buffer).getUint32(0, true);
        var head = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + size)));
        return { lengths: head[0], terms: head[1], blob: bytes.subarray(4 + size) };
      });
      cache[path].catch(function () { delete cache[path]; });
    }
    return cache[path];
  }

  function own(object, key) {
    return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : null;
  }

  /* A term's entry and the file that holds its postings: in its shard, or in the file of its
   * own the shard names (a large term). null: no page written holds it. */
  function entryOf(m, term) {
    return getShard(shardOf(m, term)).then(function (shard) {
      var entry = own(shard.terms, term);
      if (typeof entry !== "string") return entry ? { entry: entry, file: shard } : null;
      if (!/^[0-9a-f]{16}$/.test(entry)) throw new Error("a term without its file");
      return getShard("terms/" + entry + ".bin").then(function (file) {
        var found = own(file.terms, term);
        return found && typeof found !== "string" ? { entry: found, file: file } : null;
      });
    });
  }

  /* One field's postings of a term: [gap, tf, length, ...], decoded from its file's bytes
   * ([offset, count]: the documents as gaps, [offset, count, 1]: as a bitmap of meta's `docs`
   * bits; then a varint (tf - 1) * lengths + the place of its length in the file's table) or
   * as the JSON holds them ([[...]]). */
  function postingsOf(m, file, field) {
    if (!Array.isArray(field) || !field.length) return [];
    if (field.length === 1) return Array.isArray(field[0]) ? field[0] : [];
    var blob = file.blob, at = field[0], count = field[1], out = new Array(count * 3);
    var lengths = file.lengths, size = lengths.length, i, value, scale, byte;
    if (field.length === 3) {
      var bytes = Math.ceil(m.docs / 8), previous = 0, k = 0;
      for (i = 0; i < bytes && k < count; i++) {
        byte = blob[at + i];
        for (var bit = 0; bit < 8 && byte; bit++, byte >>= 1) {
          if (byte & 1) { out[3 * k++] = i * 8 + bit - previous; previous = i * 8 + bit; }
        }
      }
      at += bytes;
    } else {
      for (i = 0; i < count; i++) {
        value = 0; scale = 1;
        do { byte = blob[at++]; value += (byte & 0x7f) * scale; scale *= 128; } while (byte >= 0x80);
        out[3 * i] = value;
      }
    }
    for (i = 0; i < count; i++) {
      value = 0; scale = 1;
      do { byte = blob[at++]; value += (byte & 0x7f) * scale; scale *= 128; } while (byte >= 0x80);
      out[3 * i + 1] = Math.floor(value / size) + 1;
      out[3 * i + 2] = lengths[value % size];
    }
    return out;
  }

  /* Every matching result's score, best first: the documents named as the query first, then by
   * score (ties by document number: by page id). */
  function rank(m, queryTerms, name) {
    var nameShardOf = name ? getShard(nameShard(m, name)) : Promise.resolve(null);
    return Promise.all([Promise.all(queryTerms.map(function (t) { return entryOf(m, t); })),
      nameShardOf]).then(function (loaded) {
      var entries = loaded[0];
      var acc = new Map();
      // index/ranking.py's Searcher: a match in the names counts by the share of the names'
      // length the query's terms cover, one in the headings by the share of the query's terms
      // they hold; both are added after the other fields, in that order.
      var names = { scores: new Map(), covered: new Map(), matched: new Map() };
      var heads = { scores: new Map(), covered: new Map(), matched: new Map() };
      var k1 = m.k1, b = m.b, n = Math.max(m.doc_count, 1);
      for (var f = 0; f < m.fields.length; f++) {
        var avg = m.avg_lengths[f];
        var into = m.fields[f] === "title" ? names : m.fields[f] === "headings" ? heads : null;
        var sums = into ? into.scores : acc;
        for (var q = 0; q < queryTerms.length; q++) {
          if (!entries[q]) continue;
          var entry = entries[q].entry;
          var df = entry[0][f];
          if (!df) continue;
          var idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
          var weight = m.boosts[f] * idf * (k1 + 1);
          var postings = postingsOf(m, entries[q].file, entry[1 + f]);
          var doc = 0;
          for (var i = 0; i < postings.length; i += 3) {
            doc += postings[i];
            var tf = postings[i + 1];
            var norm = k1 * (1 - b + b * postings[i + 2] / avg);
            sums.set(doc, (sums.get(doc) || 0) + weight * tf / (tf + norm));
            if (into) {
              into.covered.set(doc, (into.covered.get(doc) || 0) + tf / Math.max(postings[i + 2], 1));
              into.matched.set(doc, (into.matched.get(doc) || 0) + 1);
            }
          }
        }
      }
      names.scores.forEach(function (score, doc) {
        acc.set(doc, (acc.get(doc) || 0) + score * Math.min(1, names.covered.get(doc)));
      });
      var size = Math.max(queryTerms.length, 1);
      heads.scores.forEach(function (score, doc) {
        acc.set(doc, (acc.get(doc) || 0) + score * (heads.matched.get(doc) / size));
      });
      var named = new Set();
      var docs = loaded[1] ? own(loaded[1].terms, NAMED + name) : null;
      if (!Array.isArray(docs)) docs = null;
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

  /* The hits described: each one's file (named by its chunk), with its text for the passage. */
  function describe(m, hits) {
    var chunks = {};
    hits.forEach(function (h) { chunks[Math.floor(h.doc / m.chunk)] = true; });
    return Promise.all(Object.keys(chunks).map(function (c) {
      return getJSON("docs/" + m.chunks[c] + ".json").then(function (names) { return [c, names]; });
    })).then(function (loaded) {
      var names = {};
      loaded.forEach(function (pair) { names[pair[0]] = pair[1]; });
      return Promise.all(hits.map(function (h) {
        var file = String(names[Math.floor(h.doc / m.chunk)][h.doc % m.chunk]);
        if (!/^[0-9a-f]{16}$/.test(file)) throw new Error("a result without its file");
        return getJSON("results/" + file + ".json").then(function (row) {
          return {
            kind: "page", href: row[0], title: row[1], summary: row[2], freshness: row[3],
            drift: row[4], sections: row[5], score: h.score
          };
        });
      }));
    });
  }

  // --- the passage (reader/passages.py, step for step) ---------------------------------------

  var PASSAGE_CHARS = 240;

  // Each word's stem, once: the passages of a page of results stem thousands of words, most
  // of them seen before.
  var stems = new Map();

  function stemOf(word) {
    var term = stems.get(word);
    if (term === undefined) {
      if (stems.size > 100000) stems.clear();
      term = stem(word);
      stems.set(word, term);
    }
    return term;
  }

  /* A row's matched words: [start, end) of each token whose term is a query term. */
  function matchLine(text, wanted, heading) {
    var spans = [];
    var found = new Set();
    for (var m of String(text).matchAll(TOKEN)) {
      var term = stemOf(m[0].toLowerCase());
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

  /* Each result with its `section` and `snippet` (null when only its summary or tags matched). */
  function attachPassages(results, queryTerms) {
    return results.map(function (r) {
      var found = passage(r.sections, queryTerms);
      r.section = found ? found.section : null;
      r.snippet = found ? found.snippet : null;
      delete r.sections;
      return r;
    });
  }

  // --- entities, and mixed hits (reader/entity_search.py, reader/mixed.py) -------------------

  var RRF_K = 60;
  var PAGE_RANKS = 20; // reader/mixed.py's: the pages whose rank counts in the merge
  var entityCache = Object.create(null);

  /* Unsigned LEB128 varints in base64 (search.py's _varints64), as numbers. */
  function varints64(text) {
    var bytes = atob(String(text || "")), out = [], value = 0, scale = 1;
    for (var i = 0; i < bytes.length; i++) {
      var byte = bytes.charCodeAt(i);
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) { out.push(value); value = 0; scale = 1; } else scale *= 128;
    }
    return out;
  }

  /* A field's terms (each as often as it occurs) as [{term: tf}, length]. */
  function frequencies(list) {
    var freqs = Object.create(null);
    (Array.isArray(list) ? list : []).forEach(function (t) { freqs[t] = (freqs[t] || 0) + 1; });
    return [freqs, Array.isArray(list) ? list.length : 0];
  }

  /* The entities' file (search.py's entity_rows), decoded once: each row's link made whole,
   * its fields' terms counted, its binding documents (gaps) made document numbers. */
  function entityData(name) {
    if (!entityCache[name]) {
      entityCache[name] = getJSON("entities/" + name + ".json").then(function (data) {
        (Array.isArray(data.entities) ? data.entities : []).forEach(function (row) {
          var at = 0;
          if (!row[2]) row[2] = "entities/" + row[0] + ".html";
          row[6] = frequencies(row[6]);
          row[7] = frequencies(row[7]);
          row[8] = varints64(row[8]).map(function (gap) { return (at += gap); });
        });
        return data;
      });
      entityCache[name].catch(function () { delete entityCache[name]; });
    }
    return entityCache[name];
  }

  /* The entities matching the query, best first: those named as the query first, then by
   * score, then by name. */
  function rankEntities(m, data, queryTerms, name) {
    var K1 = m.k1, B = m.b;
    var rows = Array.isArray(data.entities) ? data.entities : [], fields = [6, 7];
    var count = Math.max(rows.length, 1);
    var scores = new Map();
    var avg = fields.map(function (f) {
      var sum = 0;
      rows.forEach(function (row) { sum += row[f][1]; });
      return (rows.length ? sum / rows.length : 0) || 1.0;
    });
    var df = fields.map(function (f) {
      var found = Object.create(null);
      rows.forEach(function (row) {
        Object.keys(row[f][0]).forEach(function (t) { found[t] = (found[t] || 0) + 1; });
      });
      return found;
    });
    // The names count by the share of their length the terms cover, added after the
    // descriptions (entity_search's EntityIndex.scores).
    var names = new Map(), covered = new Map();
    queryTerms.forEach(function (term) {
      fields.forEach(function (f, i) {
        var d = df[i][term];
        if (!d) return;
        var weight = data.boosts[i] * Math.log(1 + (count - d + 0.5) / (d + 0.5)) * (K1 + 1);
        var into = i === 0 ? names : scores;
        rows.forEach(function (row, number) {
          var freqs = row[f][0];
          var tf = Object.prototype.hasOwnProperty.call(freqs, term) ? freqs[term] : 0;
          if (tf) {
            var norm = K1 * (1 - B + B * row[f][1] / avg[i]);
            into.set(number, (into.get(number) || 0) + weight * tf / (tf + norm));
            if (i === 0) {
              covered.set(number, (covered.get(number) || 0) + tf / Math.max(row[f][1], 1));
            }
          }
        });
      });
    });
    names.forEach(function (score, number) {
      scores.set(number, (scores.get(number) || 0) + score * Math.min(1, covered.get(number)));
    });
    var named = new Set();
    if (name) {
      rows.forEach(function (row, number) {
        if (row[5].indexOf(name) >= 0) {
          named.add(number);
          if (!scores.has(number)) scores.set(number, 0);
        }
      });
    }
    var ranked = Array.from(scores, function (pair) {
      return { number: pair[0], score: pair[1], named: named.has(pair[0]), row: rows[pair[0]] };
    });
    ranked.sort(function (x, y) {
      return (y.named - x.named) || y.score - x.score ||
        (x.row[0] < y.row[0] ? -1 : x.row[0] > y.row[0] ? 1 : 0);
    });
    return ranked;
  }

  /* Pages (`hits`, ranked) and entities merged as reader/mixed.py merges them for `limit`
   * hits: named first, then by the sum of 1 / (60 + rank) over the rankings an item is in
   * (the first PAGE_RANKS pages, the entities, the pages binding an entity found, by the best
   * rank of the entities they bind), then pages by their page rank (a page found through an
   * entity alone after the first max(limit, PAGE_RANKS)), pages before entities, then by
   * page id (the document number) or entity name. The pages' ranks count to a depth that is
   * not the limit's: the first n results are the first n of any longer search. */
  function mixed(hits, entities, limit) {
    if (!entities.length) return hits.slice(0, limit);
    var items = new Map();
    var pages = hits.slice(0, Math.max(limit, PAGE_RANKS));
    var unranked = pages.length;
    pages.forEach(function (h, r) {
      items.set("p" + h.doc, {
        kind: "page", doc: h.doc, named: h.named, rank: r,
        fused: r < PAGE_RANKS ? 1 / (RRF_K + r) : 0
      });
    });
    var best = new Map();
    entities.forEach(function (e, position) {
      e.row[8].forEach(function (doc) { if (!best.has(doc)) best.set(doc, position); });
    });
    Array.from(best).sort(function (x, y) { return x[1] - y[1] || x[0] - y[0]; })
      .forEach(function (pair, r) {
        var item = items.get("p" + pair[0]);
        if (!item) {
          item = { kind: "page", doc: pair[0], named: false, rank: unranked, fused: 0 };
          items.set("p" + pair[0], item);
        }
        item.fused = item.fused + 1 / (RRF_K + r);
      });
    entities.forEach(function (e, r) {
      items.set("e" + e.row[0], {
        kind: "entity", entity: e, named: e.named, rank: unranked, fused: 1 / (RRF_K + r)
      });
    });
    var order = Array.from(items.values());
    order.sort(function (x, y) {
      if (x.named !== y.named) return x.named ? -1 : 1;
      if (x.fused !== y.fused) return y.fused - x.fused;
      if (x.rank !== y.rank) return x.rank - y.rank;
      if (x.kind !== y.kind) return x.kind === "page" ? -1 : 1;
      if (x.kind === "page") return x.doc - y.doc;
      return x.entity.row[0] < y.entity.row[0] ? -1 : x.entity.row[0] > y.entity.row[0] ? 1 : 0;
    });
    return order.slice(0, limit).map(function (item) {
      return item.kind === "page" ? { doc: item.doc, score: item.fused, named: item.named } :
        { entity: item.entity, score: item.fused };
    });
  }

  function entityResult(e, score) {
    var row = e.row;
    return {
      kind: "entity", href: String(row[2]), title: String(row[0]), entityKind: String(row[1]),
      label: String(row[3]), summary: String(row[4]), section: null, snippet: null,
      score: score
    };
  }

  /* Results for `text`: {total, results (the first `limit`, described, pages with their
   * passages)}: pages and entities as `knowl search` (its default, `--kind all`) mixes them. */
  function search(text, limit) {
    limit = limit || PAGE_SIZE;
    return meta().then(function (m) {
      var queryTerms = scoredTerms(text);
      if (!queryTerms.length) return { total: 0, results: [] };
      var entities = m.entities ? entityData(m.entities) : Promise.resolve(null);
      return Promise.all([rank(m, queryTerms, nameKey(text)), entities]).then(function (both) {
        var hits = both[0];
        var found = both[1] ? rankEntities(m, both[1], queryTerms, nameKey(text)) : [];
        var shown = mixed(hits, found, limit);
        var pages = shown.filter(function (h) { return !h.entity; });
        var total = hits.length + found.length;
        if (found.length) {
          var bound = new Set(hits.map(function (h) { return h.doc; }));
          found.forEach(function (e) { e.row[8].forEach(function (d) { bound.add(d); }); });
          total = bound.size + found.length;
        }
        return describe(m, pages).then(function (described) {
          attachPassages(described, terms(text));
          var at = 0;
          return {
            total: total,
            results: shown.map(function (h) {
              return h.entity ? entityResult(h.entity, h.score) : described[at++];
            })
          };
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

  /* An entity's result: its name (a link to its page), its kind, its label and description. */
  function entityItem(r, li, titleClass) {
    var heading = el("p", titleClass);
    var href = siteURL(r.href);
    var link = el(href ? "a" : "span", null, r.title);
    if (href) link.href = href;
    heading.appendChild(link);
    heading.appendChild(document.createTextNode(" "));
    heading.appendChild(el("span", "badge badge-entity", r.entityKind || "entity"));
    li.appendChild(heading);
    var about = [r.label, r.summary].filter(function (x) { return x; }).join(": ");
    if (about) li.appendChild(el("p", "search-result-summary", about));
    return li;
  }

  function resultItem(r) {
    if (r.kind === "entity") return entityItem(r, el("li", "search-result search-entity"), "search-result-title");
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
          found.total + (found.total === 1 ? " result matches" : " results match") +
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
    if (r.kind === "entity") {
      li.classList.add("search-entity");
      entityItem(r, li, "search-option-title");
      li.querySelectorAll("a").forEach(function (a) { a.tabIndex = -1; });
      return li;
    }
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
          found.total + (found.total === 1 ? " result." : " results.");
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
