// @ts-check
/* Rendered documents by doc_id ({src, anchors, title}: the URL of the frame's document and
 * its reading anchors) from /frames and /lookahead, the most recently added `max` kept (no
 * DOM; the documents themselves are in the browser's cache). */

/** @typedef {import("./types.js").RenderedDoc} RenderedDoc */

export class FrameCache {
  /** @param {number} max */
  constructor(max) {
    this.max = max;
    /** @type {Map<string, RenderedDoc>} */
    this.docs = new Map();
  }

  /** @param {string} docId @returns {RenderedDoc | undefined} */
  get(docId) {
    return this.docs.get(docId);
  }

  /** @param {string} docId @returns {boolean} */
  has(docId) {
    return this.docs.has(docId);
  }

  /** @param {{doc_id: string, src: string, anchors?: number, title?: string}} doc */
  add(doc) {
    // A document added again keeps its place in the order (as a Map's insertion order does).
    this.docs.set(doc.doc_id, { src: doc.src, anchors: doc.anchors || 1, title: doc.title });
    while (this.docs.size > this.max) {
      const oldest = this.docs.keys().next().value;
      if (oldest === undefined) break;
      this.docs.delete(oldest);
    }
  }

  clear() {
    this.docs.clear();
  }
}
