/* knowl site graph: a node's neighbourhood (depth 1 or 2) or the overview of the base, drawn on
 * a canvas with a small force layout. No library, no network beyond the site's own data files
 * (knowl_build/site/graph.py describes them). Labels are drawn as canvas text or set with
 * textContent: nothing from a page is ever parsed as HTML.
 *
 * <section id="graph" data-root="../" data-node="page:global:revenue" data-depth="1">
 * data-node="" with data-depth="all" draws the overview (graph.html).
 */
(function () {
  "use strict";

  var CAP_DEPTH2 = 60; // nodes drawn at depth 2
  var DEPTH2_FILES = 12; // neighbours whose files are fetched for depth 2 (graph.py)
  var LABELS = 40; // at most this many labels drawn at rest
  var ENTITY = "entity:";
  var PAGE = "page:global:";

  var MAX_SEGMENT = 200, LONG_KEEP = 180; // urls.py

  function hex(buffer) {
    return Array.from(new Uint8Array(buffer), function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
  }

  /* urls.segment, as a promise: percent-encoded UTF-8, nothing kept but letters, digits and
   * -_.~; a long name keeps a prefix and ends in ~ and 16 hex digits of its SHA-256, which
   * only a secure context (https, localhost) can compute: elsewhere such a name gives null. */
  function segment(name) {
    var s;
    try {
      s = encodeURIComponent(name).replace(/[!'()*]/g, function (c) {
        return "%" + c.charCodeAt(0).toString(16).toUpperCase();
      });
    } catch (e) {
      return Promise.resolve(null); // not valid Unicode: no file has this name
    }
    if (/^\.+$/.test(s)) return Promise.resolve(s.replace(/\./g, "%2E"));
    if (s.length <= MAX_SEGMENT) return Promise.resolve(s);
    var subtle = window.crypto && window.crypto.subtle;
    if (!subtle) return Promise.resolve(null);
    var cut = s.slice(0, LONG_KEEP);
    var escape = cut.lastIndexOf("%");
    if (escape >= cut.length - 2) cut = cut.slice(0, escape); // never split a %XX
    return subtle.digest("SHA-256", new TextEncoder().encode(name)).then(function (d) {
      return cut + "~" + hex(d).slice(0, 16);
    }, function () { return null; });
  }

  /* A node's data file, relative to the site's root (a promise; null: none). */
  function fileOf(id) {
    var folder = id.indexOf(ENTITY) === 0 ? "entities" : id.indexOf(PAGE) === 0 ? "pages" : null;
    if (!folder) return Promise.resolve(null);
    return segment(id.slice(folder === "entities" ? ENTITY.length : PAGE.length)).then(function (name) {
      return name === null ? null : "graph/" + folder + "/" + encodeURIComponent(name) + ".json";
    });
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  function plural(n, one, many) { return n.toLocaleString("en") + " " + (n === 1 ? one : many); }

  function Graph(section) {
    this.section = section;
    this.root = new URL(section.getAttribute("data-root") || "./", window.location.href);
    this.centre = section.getAttribute("data-node") || "";
    var depth = section.getAttribute("data-depth");
    this.depth = this.centre ? (depth === "2" ? 2 : 1) : "all";
    this.files = {};
    this.build();
    this.load();
  }

  Graph.prototype.url = function (path) { return new URL(path, this.root); };

  /* A node's page, only ever a page of this site. */
  Graph.prototype.link = function (href) {
    if (!href) return null;
    var url = new URL(href, this.root);
    return url.href.indexOf(this.root.href) === 0 ? url.href : null;
  };

  Graph.prototype.fetchFile = function (path) {
    if (!this.files[path]) {
      this.files[path] = fetch(this.url(path)).then(function (response) {
        if (!response.ok) throw new Error(path + ": HTTP " + response.status);
        return response.json();
      });
    }
    return this.files[path];
  };

  Graph.prototype.build = function () {
    var s = this.section;
    s.classList.add("graph-view");
    if (this.centre) {
      var bar = el("div", "graph-controls");
      bar.setAttribute("role", "group");
      bar.setAttribute("aria-label", "Graph depth");
      var self = this;
      this.buttons = [1, 2].map(function (d) {
        var b = el("button", "graph-depth", d === 1 ? "Neighbours" : "Two links away");
        b.type = "button";
        b.setAttribute("aria-pressed", String(self.depth === d));
        b.addEventListener("click", function () {
          if (self.depth === d) return;
          self.depth = d;
          self.buttons.forEach(function (x, i) { x.setAttribute("aria-pressed", String(i + 1 === d)); });
          self.load();
        });
        bar.appendChild(b);
        return b;
      });
      s.appendChild(bar);
    }
    this.frame = el("div", "graph-frame");
    this.frame.style.position = "relative";
    this.canvas = el("canvas", "graph-canvas");
    this.canvas.setAttribute("role", "img");
    this.canvas.style.display = "block";
    this.canvas.style.width = "100%";
    this.canvas.style.touchAction = "manipulation";
    this.tip = el("div", "graph-tip");
    this.tip.hidden = true;
    this.tip.style.position = "absolute";
    this.tip.style.pointerEvents = "none";
    this.frame.appendChild(this.canvas);
    this.frame.appendChild(this.tip);
    s.appendChild(this.frame);
    this.note = el("p", "graph-note");
    this.note.setAttribute("role", "status");
    s.appendChild(this.note);
    this.legend = el("p", "graph-legend");
    [["page", "page"], ["entity", "entity"], ["warn", "not fresh"]].forEach(function (item) {
      var key = el("span", "graph-key graph-key-" + item[0], item[0] === "warn" ? "○" : "●");
      key.setAttribute("aria-hidden", "true");
      this.legend.appendChild(key);
      this.legend.appendChild(document.createTextNode(" " + item[1] + "  "));
    }, this);
    s.appendChild(this.legend);
    this.list = el("details", "graph-list");
    this.listTitle = el("summary", null, "Nodes in this graph");
    this.list.appendChild(this.listTitle);
    this.listBody = el("ul");
    this.list.appendChild(this.listBody);
    s.appendChild(this.list);
    this.bind();
  };

  // --- data ------------------------------------------------------------------------------------

  function nodesOf(doc) {
    return doc.nodes.map(function (n) {
      return { id: n[0], label: n[1], group: n[2], href: n[3], degree: n[4], freshness: n[5] };
    });
  }

  function edgesOf(doc) {
    return doc.edges.map(function (e) { return [doc.nodes[e[0]][0], doc.nodes[e[1]][0], e[2]]; });
  }

  Graph.prototype.gather = function () {
    var self = this;
    if (!this.centre) {
      return this.fetchFile("graph/overview.json").then(function (doc) {
        var nodes = nodesOf(doc);
        nodes.forEach(function (n) { n.depth = 0; });
        return {
          nodes: nodes, edges: edgesOf(doc), note: nodes.length < doc.total ?
            "Showing the " + plural(nodes.length, "most connected node", "most connected nodes") +
            " of " + plural(doc.total, "node", "nodes") + " (" + plural(doc.edge_total, "link", "links") +
            "); open a page to see its own neighbourhood." :
            plural(doc.total, "node", "nodes") + ", " + plural(doc.edge_total, "link", "links") + "."
        };
      });
    }
    return fileOf(this.centre).then(function (file) {
      if (!file) throw new Error("no graph data for this name");
      return self.fetchFile(file);
    }).then(function (doc) {
      var nodes = nodesOf(doc);
      nodes.forEach(function (n, i) { n.depth = i === 0 ? 0 : 1; });
      var edges = edgesOf(doc);
      var note = doc.total === 0 ? "Nothing links here, and this links nowhere." :
        (nodes.length - 1 < doc.total ?
          "Showing the " + (nodes.length - 1) + " most connected of " + plural(doc.total, "neighbour", "neighbours") + "." :
          plural(doc.total, "neighbour", "neighbours") + ".");
      if (self.depth !== 2 || doc.total === 0) return { nodes: nodes, edges: edges, note: note };
      var near = nodes.slice(1).sort(function (a, b) { return b.degree - a.degree; }).slice(0, DEPTH2_FILES);
      return Promise.all(near.map(function (n) {
        return fileOf(n.id).then(function (f) {
          return f ? self.fetchFile(f) : null;
        }).catch(function () { return null; });
      })).then(function (docs) {
        var have = {};
        nodes.forEach(function (n) { have[n.id] = n; });
        // Each neighbour's most connected in turn: a hub among the neighbours (an entity
        // hundreds of pages bind) never fills the picture alone.
        var far = {};
        var ranked = [];
        var lists = docs.filter(Boolean).map(function (d) {
          return nodesOf(d).filter(function (n) { return !have[n.id]; });
        });
        for (var turn = 0; lists.some(function (l) { return turn < l.length; }); turn++) {
          lists.forEach(function (l) {
            var n = l[turn];
            if (n && !far[n.id]) { far[n.id] = n; ranked.push(n.id); }
          });
        }
        var room = Math.max(0, CAP_DEPTH2 - nodes.length);
        ranked.slice(0, room).forEach(function (id) {
          far[id].depth = 2;
          nodes.push(far[id]);
          have[id] = far[id];
        });
        var seen = {};
        edges.forEach(function (e) { seen[e[0] + "\n" + e[1]] = true; });
        docs.forEach(function (d) {
          if (!d) return;
          edgesOf(d).forEach(function (e) {
            var key = e[0] + "\n" + e[1];
            if (have[e[0]] && have[e[1]] && !seen[key]) { seen[key] = true; edges.push(e); }
          });
        });
        var extra = Math.min(room, ranked.length);
        note += " " + (ranked.length > extra ?
          "Two links away: " + extra + " of the " + plural(ranked.length, "node", "nodes") + " found, a few through each neighbour." :
          "Two links away: " + plural(ranked.length, "node", "nodes") + ".");
        return { nodes: nodes, edges: edges, note: note };
      });
    });
  };

  Graph.prototype.load = function () {
    var self = this;
    var ticket = (this.ticket = (this.ticket || 0) + 1);
    this.section.setAttribute("data-state", "loading");
    this.gather().then(function (g) {
      if (ticket !== self.ticket) return;
      self.show(g);
      self.section.setAttribute("data-state", "ready");
    }, function (error) {
      if (ticket !== self.ticket) return;
      self.note.textContent = window.location.protocol === "file:" ?
        "The graph needs the site served over HTTP (for example `python -m http.server` in " +
        "its folder): browsers do not let a page read its data from file://." :
        "The graph could not be loaded (" + error.message + ").";
      self.canvas.hidden = true;
      self.section.setAttribute("data-state", "error");
    });
  };

  // --- layout ----------------------------------------------------------------------------------

  /* Colours that follow the theme, for what CSS cannot reach (the canvas) and the legend. */
  Graph.prototype.paint = function () {
    var c = this.colours();
    Array.prototype.forEach.call(this.legend.querySelectorAll(".graph-key"), function (key) {
      key.style.color = key.classList.contains("graph-key-page") ? c.page :
        key.classList.contains("graph-key-entity") ? c.entity : c.warn;
    });
    var tip = this.tip.style;
    tip.background = c.halo;
    tip.color = c.text;
    tip.padding = "2px 6px";
    tip.borderRadius = "4px";
    tip.font = "12px system-ui, sans-serif";
    tip.maxWidth = "40ch";
  };

  Graph.prototype.show = function (g) {
    this.paint();
    var byId = {};
    this.nodes = g.nodes.map(function (n, i) {
      var node = Object.assign({ index: i, x: 0, y: 0, vx: 0, vy: 0, links: [] }, n);
      byId[n.id] = node;
      return node;
    });
    this.edges = [];
    g.edges.forEach(function (e) {
      var a = byId[e[0]], b = byId[e[1]];
      if (a && b && a !== b) {
        this.edges.push({ a: a, b: b, kind: e[2] });
        a.links.push(b);
        b.links.push(a);
      }
    }, this);
    this.note.textContent = g.note;
    this.canvas.hidden = this.nodes.length < 2;
    this.canvas.setAttribute("aria-label", "Graph of " + plural(this.nodes.length, "node", "nodes") +
      (this.centre && this.nodes[0] ? " around " + this.nodes[0].label : "") + "; the list below links them.");
    this.fillList();
    this.place();
    this.hover = null;
    this.steps = 0;
    this.total = this.nodes.length > 150 ? 220 : 300;
    this.resize();
    this.run();
  };

  Graph.prototype.fillList = function () {
    var items = this.nodes.slice().sort(function (a, b) {
      return a.depth - b.depth || b.degree - a.degree || (a.label < b.label ? -1 : 1);
    }).map(function (n) {
      var li = el("li");
      var href = this.link(n.href);
      var a = el(href ? "a" : "span", null, n.label);
      if (href) a.href = href;
      li.appendChild(a);
      var kind = n.id.indexOf(ENTITY) === 0 ? "entity, " + n.group : n.group;
      var extra = kind + (n.freshness && n.freshness !== "fresh" ? ", " + n.freshness : "") +
        (this.centre ? (n.depth === 0 ? ", this page" : n.depth === 2 ? ", two links away" : "") : "");
      li.appendChild(document.createTextNode(" (" + extra + ")"));
      return li;
    }, this);
    this.listBody.replaceChildren.apply(this.listBody, items);
    this.listTitle.textContent = "The " + plural(this.nodes.length, "node", "nodes") + " of this graph, as a list";
  };

  /* Deterministic start: the centre in the middle, rings by depth; the overview on a spiral. */
  Graph.prototype.place = function () {
    var golden = Math.PI * (3 - Math.sqrt(5));
    var rings = [[], [], []];
    this.nodes.forEach(function (n) { rings[n.depth].push(n); });
    if (this.centre) {
      rings.forEach(function (ring, depth) {
        ring.forEach(function (n, i) {
          var angle = (2 * Math.PI * i) / Math.max(ring.length, 1) + depth * 0.5;
          n.x = depth * 120 * Math.cos(angle);
          n.y = depth * 120 * Math.sin(angle);
        });
      });
    } else {
      this.nodes.forEach(function (n, i) {
        var r = 18 * Math.sqrt(i + 0.5);
        n.x = r * Math.cos(i * golden);
        n.y = r * Math.sin(i * golden);
      });
    }
  };

  /* Fruchterman-Reingold with gravity: every pair repels, links attract. n <= 300 here, so the
   * O(n^2) pass is a few ms; it runs a few steps per frame and stops, never blocking input. */
  Graph.prototype.step = function () {
    var nodes = this.nodes, n = nodes.length, k = 60, i, j, a, b, dx, dy, d2, d, f;
    var t = 12 * (1 - this.steps / this.total) + 0.5;
    for (i = 0; i < n; i++) { nodes[i].vx = 0; nodes[i].vy = 0; }
    for (i = 0; i < n; i++) {
      a = nodes[i];
      for (j = i + 1; j < n; j++) {
        b = nodes[j];
        dx = a.x - b.x; dy = a.y - b.y;
        d2 = dx * dx + dy * dy + 0.01;
        f = (k * k) / d2;
        a.vx += dx * f; a.vy += dy * f;
        b.vx -= dx * f; b.vy -= dy * f;
      }
    }
    this.edges.forEach(function (e) {
      dx = e.a.x - e.b.x; dy = e.a.y - e.b.y;
      d = Math.sqrt(dx * dx + dy * dy) + 0.01;
      f = d / k;
      e.a.vx -= dx * f; e.a.vy -= dy * f;
      e.b.vx += dx * f; e.b.vy += dy * f;
    });
    for (i = 0; i < n; i++) {
      a = nodes[i];
      a.vx -= a.x * 0.02; a.vy -= a.y * 0.02;
      d = Math.sqrt(a.vx * a.vx + a.vy * a.vy) + 0.01;
      if (this.centre && a.depth === 0) continue; // the centre stays in the middle
      a.x += (a.vx / d) * Math.min(d, t);
      a.y += (a.vy / d) * Math.min(d, t);
    }
    this.steps++;
  };

  Graph.prototype.run = function () {
    var self = this;
    if (this.animating) return;
    this.animating = true;
    var reduce = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    function frame() {
      var budget = reduce ? self.total : 6;
      while (budget-- > 0 && self.steps < self.total) self.step();
      self.fit();
      self.draw();
      if (self.steps < self.total) window.requestAnimationFrame(frame);
      else self.animating = false;
    }
    window.requestAnimationFrame(frame);
  };

  // --- drawing ---------------------------------------------------------------------------------

  Graph.prototype.resize = function () {
    var width = Math.max(200, this.frame.clientWidth || 600);
    var height = Math.round(Math.min(560, Math.max(240, width * (this.centre ? 0.6 : 0.75))));
    var ratio = window.devicePixelRatio || 1;
    this.width = width;
    this.height = height;
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(height * ratio);
    this.canvas.style.height = height + "px";
    this.ratio = ratio;
    if (this.nodes) { this.fit(); this.draw(); }
  };

  Graph.prototype.fit = function () {
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    this.nodes.forEach(function (n) {
      minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x);
      minY = Math.min(minY, n.y); maxY = Math.max(maxY, n.y);
    });
    var margin = 36;
    var sx = (this.width - 2 * margin) / Math.max(maxX - minX, 1);
    var sy = (this.height - 2 * margin) / Math.max(maxY - minY, 1);
    this.scale = Math.min(sx, sy, 2.5);
    this.ox = this.width / 2 - ((minX + maxX) / 2) * this.scale;
    this.oy = this.height / 2 - ((minY + maxY) / 2) * this.scale;
  };

  Graph.prototype.colours = function () {
    var style = window.getComputedStyle(this.section);
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    function pick(name, light, darkValue) {
      var v = style.getPropertyValue(name).trim();
      return v || (dark ? darkValue : light);
    }
    return {
      text: style.color || (dark ? "#e6e6e6" : "#1a1a1a"),
      page: pick("--graph-page", "#2563eb", "#7aa7ff"),
      entity: pick("--graph-entity", "#b45309", "#f5a524"),
      warn: pick("--graph-warn", "#dc2626", "#ff6b6b"),
      edge: pick("--graph-edge", "rgba(100,116,139,0.45)", "rgba(148,163,184,0.45)"),
      halo: pick("--graph-halo", "rgba(255,255,255,0.85)", "rgba(17,17,17,0.85)")
    };
  };

  Graph.prototype.radius = function (n) {
    return Math.min(4 + Math.sqrt(n.degree || 0), 14) + (this.centre && n.depth === 0 ? 3 : 0);
  };

  Graph.prototype.screen = function (n) {
    return [this.ox + n.x * this.scale, this.oy + n.y * this.scale];
  };

  Graph.prototype.draw = function () {
    var ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    var c = this.colours(), self = this, hover = this.hover;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    ctx.lineWidth = 1;
    this.edges.forEach(function (e) {
      var p = self.screen(e.a), q = self.screen(e.b);
      var lit = hover && (e.a === hover || e.b === hover);
      ctx.strokeStyle = lit ? c.text : c.edge;
      ctx.lineWidth = lit ? 1.5 : 1;
      ctx.setLineDash(e.kind === "sl_ref" || e.kind === "member_of" ? [4, 3] : []);
      ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
    });
    ctx.setLineDash([]);
    this.nodes.forEach(function (n) {
      var p = self.screen(n), r = self.radius(n);
      ctx.beginPath();
      ctx.arc(p[0], p[1], r, 0, 2 * Math.PI);
      ctx.fillStyle = n.id.indexOf(ENTITY) === 0 ? c.entity : c.page;
      ctx.globalAlpha = hover && hover !== n && hover.links.indexOf(n) < 0 ? 0.35 : 1;
      ctx.fill();
      if (n.freshness && n.freshness !== "fresh") {
        ctx.lineWidth = 2.5; ctx.strokeStyle = c.warn; ctx.stroke();
      }
      if (self.centre && n.depth === 0) {
        ctx.lineWidth = 2; ctx.strokeStyle = c.text;
        ctx.beginPath(); ctx.arc(p[0], p[1], r + 3, 0, 2 * Math.PI); ctx.stroke();
      }
      ctx.globalAlpha = 1;
    });
    // Labels: the centre and the most connected, then the hovered node and its neighbours.
    var labelled = this.nodes.filter(function (n) { return n.depth < 2; }).sort(function (a, b) {
      return a.depth - b.depth || b.degree - a.degree;
    }).slice(0, this.centre ? LABELS : 20);
    if (hover) labelled = [hover].concat(hover.links);
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    labelled.forEach(function (n) {
      var p = self.screen(n), r = self.radius(n), text = clip(n.label, 32);
      var x = p[0] + r + 4;
      if (x + ctx.measureText(text).width > self.width) x = p[0] - r - 4 - ctx.measureText(text).width;
      ctx.lineWidth = 3; ctx.strokeStyle = c.halo; ctx.strokeText(text, x, p[1]);
      ctx.fillStyle = c.text; ctx.fillText(text, x, p[1]);
    });
  };

  // --- interaction -----------------------------------------------------------------------------

  Graph.prototype.at = function (event) {
    var rect = this.canvas.getBoundingClientRect();
    var x = event.clientX - rect.left, y = event.clientY - rect.top, best = null, bestD = Infinity;
    (this.nodes || []).forEach(function (n) {
      var p = this.screen(n), dx = p[0] - x, dy = p[1] - y, d = dx * dx + dy * dy;
      var r = this.radius(n) + 5;
      if (d <= r * r && d < bestD) { best = n; bestD = d; }
    }, this);
    return best;
  };

  Graph.prototype.bind = function () {
    var self = this;
    this.canvas.addEventListener("mousemove", function (event) {
      var n = self.at(event);
      if (n === self.hover) return;
      self.hover = n;
      self.canvas.style.cursor = n && self.link(n.href) ? "pointer" : "default";
      if (n) {
        self.tip.textContent = n.label + (n.freshness && n.freshness !== "fresh" ? " (" + n.freshness + ")" : "");
        var p = self.screen(n);
        self.tip.style.left = Math.min(p[0] + 12, self.width - 160) + "px";
        self.tip.style.top = p[1] + 12 + "px";
        self.tip.hidden = false;
      } else {
        self.tip.hidden = true;
      }
      self.draw();
    });
    this.canvas.addEventListener("mouseleave", function () {
      self.hover = null; self.tip.hidden = true; self.draw();
    });
    this.canvas.addEventListener("click", function (event) {
      var n = self.at(event), href = n && self.link(n.href);
      if (href) window.location.href = href;
    });
    if (window.ResizeObserver) {
      var last = 0;
      new ResizeObserver(function () {
        var w = self.frame.clientWidth;
        if (w && w !== last) { last = w; self.resize(); }
      }).observe(this.frame);
    }
  };

  function setup() {
    var section = document.getElementById("graph");
    if (section && !section.knowlGraph) section.knowlGraph = new Graph(section);
  }

  window.knowlGraph = { segment: segment, fileOf: fileOf };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
