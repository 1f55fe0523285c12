// Unit tests of the judging page's cache of document frames (app/static/js/judge/frame-cache.js):
// what it keeps per document (the URL of its frame and its anchors) and which it drops.
import assert from "node:assert/strict";
import { test } from "node:test";

import { FrameCache } from "../../app/static/js/judge/frame-cache.js";

const url = (id) => "/tasks/7/document?doc=" + id + "&hl=1&v=abc" + id;

test("keeps a document's URL, anchors and title, never its markup", () => {
  const cache = new FrameCache(4);
  cache.add({ doc_id: "d1", src: url("d1"), anchors: 12, title: "One", srcdoc: "<p>x</p>" });
  assert.equal(cache.has("d1"), true);
  assert.deepEqual(cache.get("d1"), { src: url("d1"), anchors: 12, title: "One" });
  assert.equal(cache.get("d2"), undefined);
});

test("a document without anchors has one", () => {
  const cache = new FrameCache(4);
  cache.add({ doc_id: "d1", src: url("d1") });
  assert.equal(cache.get("d1").anchors, 1);
});

test("drops the oldest added beyond its size; adding again updates in place", () => {
  const cache = new FrameCache(2);
  cache.add({ doc_id: "a", src: url("a"), anchors: 2 });
  cache.add({ doc_id: "b", src: url("b"), anchors: 3 });
  cache.add({ doc_id: "a", src: url("a") + "x", anchors: 5 }); // same id: no eviction
  assert.deepEqual([...cache.docs.keys()], ["a", "b"]);
  assert.equal(cache.get("a").src, url("a") + "x");
  cache.add({ doc_id: "c", src: url("c"), anchors: 1 });
  assert.deepEqual([...cache.docs.keys()], ["b", "c"]);
  assert.equal(cache.has("a"), false);
  cache.clear();
  assert.equal(cache.has("b") || cache.has("c"), false);
});
