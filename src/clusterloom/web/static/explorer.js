// clusterloom explorer: zoom buttons on the pictures. Everything else works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll(".picture.zoomable")) {
    const picture = box.querySelector("svg");
    if (!picture) continue;
    const base = picture.getBoundingClientRect().width || 800;
    let scale = 1;
    const bar = document.createElement("div");
    bar.className = "zoom-bar";
    const set = (next) => {
      scale = Math.min(8, Math.max(1, next));
      picture.style.width = (base * scale) + "px";
      picture.style.maxWidth = scale === 1 ? "100%" : "none";
    };
    for (const [label, change] of [["zoom in", 2], ["zoom out", 0.5], ["fit", 0]]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.addEventListener("click", () => set(change === 0 ? 1 : scale * change));
      bar.appendChild(button);
    }
    box.parentNode.insertBefore(bar, box);
  }
});
