// The swap demo page: the sparsity slider picks one of the steps simulated before the page
// was written (`data.steps`, one per sparsity of `data.grid`); the Bokeh callbacks call
// the object swapPage returns.
import { player } from "./player.js";

export function swapPage(data, root = document) {
  const state = {timer: null};
  const readout = k => { root.getElementById("pcr-readout").innerHTML = data.steps[k].readout; };
  function stop(button) { clearInterval(state.timer); state.timer = null; button.label = "\u25b6 play"; }
  if (root.readyState === "loading") root.addEventListener("DOMContentLoaded", () => readout(data.start));
  else readout(data.start);
  return {
    // m: the ratio plot's current points, the policy bars, the span at the sparsity
    show(slider, m) {
      const k = slider.categories.indexOf(slider.value), step = data.steps[k];
      m.current.data = structuredClone(step.current);
      m.bars.data = structuredClone(step.bars);
      m.span.location = data.grid[k];
      readout(k);
    },
    play: player(state, stop, 500),
  };
}
