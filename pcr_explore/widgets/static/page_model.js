// A page's model for an explorer's module: the part of anywidget's model interface the
// explorers use (get, set, on, off, save_changes, send), held in the page. The demo pages
// fill it with numbers measured before the page was written.
export class PageModel {
  constructor(state) { this.state = {...state}; this.handlers = {}; }
  get(key) { return this.state[key]; }
  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    for (const fn of this.handlers[`change:${key}`] || []) fn();
  }
  on(event, fn) { (this.handlers[event] = this.handlers[event] || []).push(fn); }
  off(event, fn) {
    this.handlers[event] = (this.handlers[event] || []).filter(f => fn && f !== fn);
  }
  save_changes() {}
  send() {}
}
