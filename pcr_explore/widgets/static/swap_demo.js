// The swap demo page: SwapExplorer's own module (swap_explorer.js) on a model of the
// page's. Every step was simulated before the page was written, one per sparsity of
// `data.grid` (see pcr_explore.widgets.swap_demo); moving the sparsity puts that step's
// bars, markers and readouts into the model, as the kernel would.
import { PageModel } from "./page_model.js";
import { renderSwap } from "./swap_explorer.js";

// The step simulated nearest to sparsity `s`.
export function stepAt(data, s) {
  let at = 0;
  data.grid.forEach((x, i) => { if (Math.abs(x - s) < Math.abs(data.grid[at] - s)) at = i; });
  return data.steps[at];
}

export function swapPage(data, host) {
  const model = new PageModel({...data.start, ...stepAt(data, data.start.sparsity)});
  model.on("change:sparsity", () => {
    for (const [k, v] of Object.entries(stepAt(data, model.get("sparsity")))) model.set(k, v);
  });
  renderSwap({model, el: host});
  return model;
}
