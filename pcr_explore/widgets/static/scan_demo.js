// The scan demo page: ScanExplorer's own module (scan_explorer.js) on a model of the
// page's. Every image's pictures, byte counters, readouts and curve were measured before
// the page was written (`data`: see pcr_explore.widgets.scan_demo); choosing another
// image puts its numbers into the model, as the kernel would.
import { PageModel } from "./page_model.js";
import { renderScan } from "./scan_explorer.js";

// What the model holds for image `i` of the page (pictures are indices into `data.pics`).
export function imageState(data, i) {
  const im = data.images[i], pic = j => data.pics[j];
  return {size: im.size, pictures: im.pictures.map(pic), diffs: im.diffs.map(pic),
          captions: im.captions, readouts: im.readouts, curve: im.curve};
}

export function scanPage(data, host) {
  const model = new PageModel({...data.start, ...imageState(data, data.start.image)});
  model.on("change:image", () => {
    for (const [k, v] of Object.entries(imageState(data, model.get("image")))) model.set(k, v);
  });
  renderScan({model, el: host});
  return model;
}
