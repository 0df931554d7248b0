// clusterloom explorer: draws each .chart[data-figure] with plotly (served from /static).
"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  for (const box of document.querySelectorAll(".chart[data-figure]")) {
    const response = await fetch(box.dataset.figure, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) {
      box.textContent = `chart not available (${response.status})`;
      continue;
    }
    const figure = await response.json();
    if (!figure.data || figure.data.length === 0) {
      box.textContent = (figure.layout && figure.layout.title && (figure.layout.title.text || figure.layout.title)) + ": no data in this run";
      continue;
    }
    window.Plotly.newPlot(box, figure.data, figure.layout || {}, { responsive: true, displaylogo: false });
  }
});
