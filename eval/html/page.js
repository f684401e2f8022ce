// kgprobe HTML report: the instance browser. The data is gzip-compressed JSON in base64
// (eval/html_data.py), decompressed with the browser's DecompressionStream: no network.
"use strict";
(async function () {
  const PAGE = 50;
  if (!document.getElementById("kgp-data")) return;
  const status = document.getElementById("kgp-status");
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "onclick") e.onclick = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  };
  let D;
  try {
    const b64 = document.getElementById("kgp-data").textContent.trim();
    const raw = atob(b64);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    D = JSON.parse(await new Response(stream).text());
  } catch (e) {
    status.textContent = "The instance data could not be read in this browser (" + e +
      "); it needs DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 or later).";
    return;
  }
  const S = D.strings, R = D.rows, I = D.instances, runs = D.runs;
  const str = (i) => (i < 0 ? "–" : S[i]);
  const runName = (r) => runs[r].model + (runs[r].several ? " [" + runs[r].label + "]" : "");
  const fProbe = document.getElementById("f-probe"), fPrompt = document.getElementById("f-prompt");
  const fModel = document.getElementById("f-model"), fOut = document.getElementById("f-outcome");
  const fText = document.getElementById("f-text");
  const add = (sel, value, text) => sel.append(el("option", { value: value }, text));
  [...new Set(I.probe)].map(str).sort().forEach((p) => add(fProbe, p, p));
  [...new Set(R.prompt)].sort((a, b) => a - b).forEach((p) => add(fPrompt, p, "prompt " + p));
  const models = [...new Set(runs.map((_, r) => runName(r)))].sort();
  models.forEach((m) => add(fModel, m, m));
  let hits = [], page = 0, selected = -1;
  const tbody = document.querySelector("#kgp-list tbody");
  const count = document.getElementById("kgp-count");

  function filter() {
    const probe = fProbe.value, prompt = fPrompt.value, model = fModel.value, out = fOut.value;
    const text = fText.value.trim().toLowerCase();
    const modelOf = runs.map((_, r) => runName(r));
    hits = [];
    for (let k = 0; k < R.run.length; k++) {
      const i = R.inst[k];
      if (probe && str(I.probe[i]) !== probe) continue;
      if (prompt !== "" && String(R.prompt[k]) !== prompt) continue;
      if (model && modelOf[R.run[k]] !== model) continue;
      if (out === "right" && !R.right[k]) continue;
      if (out === "wrong" && R.right[k]) continue;
      if (text) {
        const hay = [str(I.target[i]), str(R.answer[k]), I.id[i], ...I.gold[i].map(str)]
          .join(" ").toLowerCase();
        if (!hay.includes(text)) continue;
      }
      hits.push(k);
    }
    page = 0;
    draw();
  }

  function draw() {
    tbody.replaceChildren();
    const start = page * PAGE, end = Math.min(hits.length, start + PAGE);
    for (let h = start; h < end; h++) {
      const k = hits[h], i = R.inst[k];
      const tr = el("tr", { "data-row": k, onclick: () => show(k) },
        el("td", {}, str(I.probe[i])), el("td", {}, str(I.split[i])),
        el("td", {}, str(I.target[i]) === "–" ? I.id[i] : str(I.target[i])),
        el("td", {}, runName(R.run[k])), el("td", { class: "num" }, R.prompt[k]),
        el("td", {}, str(R.answer[k])), el("td", {}, I.gold[i].map(str).join(", ")),
        el("td", { class: R.right[k] ? "right" : "wrong" }, R.right[k] ? "right" : "wrong"));
      if (k === selected) tr.className = "sel";
      tbody.append(tr);
    }
    count.textContent = hits.length.toLocaleString("en") + " predictions" +
      (hits.length ? " (showing " + (start + 1) + "–" + end + ")" : "");
    document.getElementById("kgp-prev").disabled = page === 0;
    document.getElementById("kgp-next").disabled = end >= hits.length;
  }

  function table(head, rows, cls) {
    return el("table", cls ? { class: cls } : {},
      el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows));
  }

  // one prediction's view, in the browser's detail box or another (an agreement list's)
  function show(k, box) {
    box = box || document.getElementById("kgp-detail");
    selected = k;
    const i = R.inst[k], run = runs[R.run[k]], gold = new Set(I.gold[i].map(str));
    const scores = R.scores[k];
    const cands = R.cands[k].map((c, j) => {
      const rank = 1 + scores.filter((s) => s !== null && scores[j] !== null && s > scores[j]).length;
      const isGold = gold.has(str(c)) || gold.has(str(c).toLowerCase());
      return el("tr", isGold ? { class: "gold" } : {}, el("td", { class: "num" }, rank),
        el("td", {}, str(c)), el("td", { class: "num" }, scores[j] === null ? "–" : scores[j]));
    });
    const template = (run.templates || [])[R.prompt[k]];
    const parts = [
      el("h3", {}, str(I.probe[i]) + " / " + str(I.split[i]) + " / instance " + I.id[i]),
      el("p", {}, "Model: ", run.model + " (run " + run.label + "), prompt " + R.prompt[k] +
        (template ? ": " + template : "")),
      el("div", { class: "prompt" }, str(R.text[k])),
      el("p", {}, "Gold: ", el("b", {}, [...gold].join(", ") || "–"), " — model answer: ",
        el("b", {}, str(R.answer[k])), " ",
        el("span", { class: R.right[k] ? "right" : "wrong" }, R.right[k] ? "right" : "wrong")),
      el("h3", {}, "Candidates (rank 1 = the model's answer; gold shaded)"),
      table(["rank", "candidate", "score"], cands, "cands"),
    ];
    const others = [];
    for (let o = 0; o < R.run.length; o++) {
      if (R.inst[o] === i && o !== k) others.push(el("tr", { onclick: () => show(o, box) },
        el("td", {}, runName(R.run[o])), el("td", { class: "num" }, R.prompt[o]),
        el("td", {}, str(R.answer[o])),
        el("td", { class: R.right[o] ? "right" : "wrong" }, R.right[o] ? "right" : "wrong")));
    }
    if (others.length) parts.push(el("h3", {}, "The same instance under other models and prompts"),
      table(["model", "prompt", "answer", ""], others));
    parts.push(...generated(i, run), ...patterns(R.run[k], i));
    const b = I.bindings[i], t = I.triples[i];
    parts.push(el("h3", {}, "Provenance: the SPARQL bindings"));
    if (!b) parts.push(el("p", { class: "note" }, "No provenance stored for this instance: " +
      "export the probe again (python -m probes.engine.export) with this kgprobe version."));
    else parts.push(table(["variable", "value", "label", "named graph(s)"], b.map((x) =>
      el("tr", {}, el("td", {}, "?" + x.var), el("td", { class: x.iri ? "iri" : "" }, x.value),
        el("td", {}, x.label || "–"),
        // a literal is in every graph that holds the same string: that is no provenance
        el("td", { class: "iri" }, x.iri ? (x.graphs || []).join(" ") || "–"
          : "– (a literal; the triples below show where it was found)"))),
      "bindings"));
    if (b) {
      parts.push(el("h3", {}, "Triples linking these values"));
      parts.push(t && t.length ? table(["subject", "predicate", "object", "named graph"],
        t.map((x) => el("tr", {}, ...x.map((v) => el("td", { class: "iri" }, v)))), "triples")
        : el("p", { class: "note" }, "No triple links two of this instance's values " +
          "directly (they may be joined through other nodes in the query)."));
    }
    box.replaceChildren(...parts);
    box.hidden = false;
    draw();
  }

  // the instance's generated answers under the generate runs of the same model and probe
  function generated(i, run) {
    const G = D.gens, rows = [];
    for (let g = 0; g < G.run.length; g++) {
      const gr = runs[G.run[g]];
      if (G.inst[g] !== i || gr.model !== run.model || gr.probe !== run.probe) continue;
      rows.push(el("tr", {}, el("td", {}, runName(G.run[g])), el("td", { class: "num" }, G.prompt[g]),
        el("td", { class: "prompt" }, str(G.text[g])), el("td", {}, str(G.answer[g])),
        el("td", {}, str(G.finish[g])), el("td", {}, G.forms[g].map(str).join(", ")),
        G.said[g] === null ? el("td", {}, "–")
          : el("td", { class: G.said[g] ? "right" : "wrong" }, G.said[g] ? "said" : "not said")));
    }
    return rows.length ? [el("h3", {}, "Generated answers (said: an accepted form is contained)"),
      table(["run", "prompt", "prompt text", "generated answer", "ended", "accepted forms", ""],
        rows, "gens")] : [];
  }

  // a ParaRel fact: its answer under every pattern, and its consistency
  function patterns(r, i) {
    const P = D.pararel[r + "/" + i];
    if (!P) return [];
    const rows = P.patterns.map((x) => el("tr", {}, el("td", { class: "num" }, x[0]),
      el("td", {}, str(x[1])), el("td", {}, str(x[2])),
      el("td", { class: x[3] ? "right" : "wrong" }, x[3] ? "right" : "wrong"),
      el("td", {}, x[4] ? "yes" : "no"), el("td", {}, x[5] ? "skipped (a/an)" : "")));
    const c = P.consistency === null ? "– (no graph edge whose two patterns pass the a/an filter)"
      : P.consistency.toFixed(3) + " over " + P.pairs + " graph-edge pair" +
        (P.pairs === 1 ? "" : "s") + " (a pattern failing the a/an filter left out)";
    return [el("h3", {}, "Under every pattern (majority answer: " + str(P.majority) + ")"),
      el("p", {}, "Consistency of this fact: ", el("b", {}, c)),
      table(["pattern", "pattern text", "top candidate", "", "agrees with the majority",
        "a/an filter"], rows, "patterns")];
  }

  // the agreement section's instances open the same view, under their list
  const agreeRows = document.querySelectorAll("tr.agree-row"), first = new Map();
  const keyOf = (run, probe, split, id) => JSON.stringify([run, probe, split, id]);
  if (agreeRows.length) for (let o = 0; o < R.run.length; o++) {  // each one's first prompt
    const i = R.inst[o], key = keyOf(runs[R.run[o]].id, str(I.probe[i]), str(I.split[i]), I.id[i]);
    if (!first.has(key) || R.prompt[o] < R.prompt[first.get(key)]) first.set(key, o);
  }
  for (const tr of agreeRows) {
    const d = tr.closest(".agree").dataset, k = first.get(keyOf(d.run, d.probe, d.split,
      tr.dataset.inst));
    if (k === undefined) continue;
    tr.onclick = () => {
      for (const s of document.querySelectorAll("tr.agree-row.sel")) s.classList.remove("sel");
      tr.classList.add("sel");
      show(k, tr.closest(".agree").querySelector(".agree-detail"));
    };
  }

  for (const f of [fProbe, fPrompt, fModel, fOut]) f.onchange = filter;
  fText.oninput = filter;
  document.getElementById("kgp-prev").onclick = () => { page--; draw(); };
  document.getElementById("kgp-next").onclick = () => { page++; draw(); };
  filter();
  status.textContent = "";
  document.body.dataset.ready = performance.now().toFixed(0);
})();
