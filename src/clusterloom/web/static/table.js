// clusterloom explorer: a stored table paged, sorted and searched on the server.
// The page's links do the same without script; this fetches JSON pages in place.
"use strict";
(() => {
  const text = (v) => (v === null || v === undefined ? "" : typeof v === "number"
    ? (Number.isInteger(v) && Math.abs(v) >= 10000 ? v.toLocaleString("en-US") : String(v)) : String(v));

  function setup(section) {
    const api = section.dataset.api;
    const state = {
      offset: Number(section.dataset.offset) || 0,
      limit: Number(section.dataset.limit) || 50,
      sort: section.dataset.sort || "",
      desc: section.dataset.desc === "true",
      q: section.dataset.q || "",
      where: (section.dataset.where || "").split("\n").filter((w) => w),
    };
    const tbody = section.querySelector("tbody");
    const range = section.querySelector("[data-range]");
    const total = document.querySelector("[data-total]");
    const pager = section.querySelector(".pager");
    const headers = section.querySelectorAll("th[data-col]");
    let seq = 0;

    function params() {
      const p = new URLSearchParams();
      p.set("offset", state.offset);
      p.set("limit", state.limit);
      if (state.sort) p.set("sort", state.sort);
      if (state.desc) p.set("desc", "true");
      if (state.q) p.set("q", state.q);
      for (const w of state.where) p.append("where", w);
      return p;
    }

    function render(page) {
      tbody.replaceChildren(...page.rows.map((row) => {
        const tr = document.createElement("tr");
        for (const v of row) {
          const td = document.createElement("td");
          if (typeof v === "number") td.className = "num";
          td.textContent = text(v);
          tr.appendChild(td);
        }
        return tr;
      }));
      const first = page.total ? state.offset + 1 : 0;
      const last = Math.min(state.offset + state.limit, page.total);
      range.textContent = `rows ${first.toLocaleString("en-US")}–${last.toLocaleString("en-US")} of ${page.total.toLocaleString("en-US")}`;
      if (total) total.textContent = page.total.toLocaleString("en-US");
      pager.querySelector('a[rel="prev"]')?.classList.toggle("muted", state.offset === 0);
      pager.querySelector('a[rel="next"]')?.classList.toggle("muted", last >= page.total);
      for (const th of headers) {
        const col = th.dataset.col;
        const link = th.querySelector("a");
        link.textContent = col + (state.sort === col ? (state.desc ? " ▼" : " ▲") : "");
        if (state.sort === col) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
        else th.removeAttribute("aria-sort");
      }
      section.dataset.total = page.total;
      history.replaceState(null, "", "?" + params().toString());
    }

    async function load() {
      const mine = ++seq;
      section.classList.add("loading");
      const response = await fetch(api + "?" + params().toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (mine !== seq) return;
      section.classList.remove("loading");
      if (!response.ok) {
        range.textContent = `error ${response.status}`;
        return;
      }
      render(await response.json());
    }

    for (const th of headers) {
      th.querySelector("a").addEventListener("click", (e) => {
        e.preventDefault();
        const col = th.dataset.col;
        state.desc = state.sort === col ? !state.desc : false;
        state.sort = col;
        state.offset = 0;
        load();
      });
    }
    // the filter form (form.filter) reloads the page: its filters are shown in the heading
    const form = section.querySelector("form.search:not(.filter)");
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      state.q = form.querySelector("input[name=q]").value.trim();
      state.offset = 0;
      load();
    });
    pager.addEventListener("click", (e) => {
      const a = e.target.closest("a[rel]");
      if (!a) return;
      e.preventDefault();
      const totalRows = Number(section.dataset.total || total?.textContent.replace(/,/g, "") || 0);
      if (a.rel === "next" && state.offset + state.limit < totalRows) state.offset += state.limit;
      if (a.rel === "prev") state.offset = Math.max(0, state.offset - state.limit);
      load();
    });
    // both links always present once the script runs, so paging works in both directions
    for (const [rel, label] of [["prev", "‹ previous"], ["next", "next ›"]]) {
      if (!pager.querySelector(`a[rel="${rel}"]`)) {
        const a = document.createElement("a");
        a.rel = rel;
        a.href = "#";
        a.textContent = label;
        const placeholder = [...pager.querySelectorAll("span.muted")].find((s) => s.textContent === label);
        if (placeholder) placeholder.replaceWith(a);
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const section of document.querySelectorAll("section.table[data-api]")) setup(section);
  });
})();
