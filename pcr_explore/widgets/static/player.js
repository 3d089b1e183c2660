// The play button of a page: steps a categorical slider to its last value every `ms`
// milliseconds; a second press, or the last value, stops it. `state.timer` holds the
// interval; `stop(button)` clears it and puts the button's label back.
export function player(state, stop, ms) {
  return function (slider, button) {
    if (state.timer !== null) { stop(button); return; }
    const cats = slider.categories;
    if (cats.indexOf(slider.value) >= cats.length - 1) slider.value = cats[0];
    button.label = "\u275a\u275a pause";
    state.timer = setInterval(() => {
      const p = cats.indexOf(slider.value);
      if (p >= cats.length - 1) { stop(button); return; }
      slider.value = cats[p + 1];
      if (p + 1 >= cats.length - 1) stop(button);
    }, ms);
  };
}
