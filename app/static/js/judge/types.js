// @ts-check
/* The data the judging page works with: the boot payload the server hands over in
 * <script type="application/json" id="hj-boot"> (app/web/assess.py and
 * second_opinions.py) and the question body of the REST API (/api/v1/tasks/{id}/next, the
 * answers to /judgments and /undo; docs/rest-api.md#the-judging-loop). Types only. */

/**
 * A document as a question names it: with "documents": "refs" only doc_id and title; the
 * first question (and /next) carries the text too.
 * @typedef {object} DocRef
 * @property {string} doc_id
 * @property {string} [title]
 * @property {string} [text]
 * @property {string} [html]
 */

/**
 * @typedef {object} Progress
 * @property {number} judgments
 * @property {number} estimated_remaining
 * @property {number} [expected_remaining]
 * @property {number} [max_remaining]
 * @property {boolean} [done]
 */

/** @typedef {"left" | "right" | "tie" | "not_relevant"} PairOutcome */

/**
 * The question body: a pair (T1, top-k) or one document to grade (T2); `done` when the task
 * is finished, `waiting` when its question went to a second assessor.
 * @typedef {object} Question
 * @property {number} seq
 * @property {boolean} done
 * @property {Progress} progress
 * @property {number} [task_id]
 * @property {string} [method]
 * @property {number} [active_ms]
 * @property {{left: DocRef, right: DocRef}} [pair]
 * @property {DocRef} [document]
 * @property {PairOutcome[]} [allowed_outcomes]
 * @property {string | null} [challenger] "left" | "right" | null (a doc id is accepted too)
 * @property {boolean} [waiting]
 */

/**
 * The boot payload of a judging page.
 * @typedef {object} Boot
 * @property {number} task_id
 * @property {"topk" | "graded"} method
 * @property {number} k
 * @property {boolean} allow_ties
 * @property {boolean} not_relevant
 * @property {string} csrf_token
 * @property {number} idle_seconds
 * @property {number} active_ms active time already stored for this task
 * @property {string} done_url
 * @property {string} login_url
 * @property {string} frame_csp
 * @property {string} document_url the URL of the documents' frames, without a query
 * @property {string} lookahead_url
 * @property {string} frames_url
 * @property {boolean} highlight
 * @property {string} highlight_cookie
 * @property {string} [guidelines_key]
 * @property {string} [guidelines_version]
 * @property {string[]} [grade_names]
 * @property {Question} [question]
 * @property {string} [api_url] a second opinion answers on its own URL
 * @property {string} [store_key]
 */

/**
 * A rendered document for a sandboxed frame (/frames and /lookahead): the URL it is loaded
 * from (GET /tasks/{id}/document?doc=...&hl=...&v=...) and its reading anchors.
 * @typedef {object} RenderedDoc
 * @property {string} src
 * @property {number} anchors
 * @property {string} [title]
 */

/**
 * What a request answered: status 0 never happens (a network error rejects instead).
 * @typedef {object} Reply
 * @property {number} status
 * @property {boolean} ok
 * @property {any} data the parsed JSON body, or null
 */

/**
 * A request of the judging loop, kept unchanged until it got through (retries resend it).
 * @typedef {object} LoopRequest
 * @property {"judgment" | "undo"} kind
 * @property {string} path
 * @property {Record<string, any>} body
 * @property {string} [method]
 * @property {number} [attempts] failed attempts so far
 * @property {number} [undoFromSeq] the seq an undo started from
 * @property {number} [seq]
 * @property {string} [brokenTitle]
 */

export {};
