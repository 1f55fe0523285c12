// ESLint 9 flat config for the browser scripts (app/static/js: ES modules, no bundler) and
// their node:test unit tests (tests/js). Run: npx eslint (see tests/js/run.sh).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/**", "artifacts/**", "docs/**"] },
  js.configs.recommended,
  {
    files: ["app/static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser },
    },
    rules: {
      "no-var": "error",
      "prefer-const": "error",
      "eqeqeq": ["error", "always"],
      "no-implicit-globals": "error",
      "no-shadow": "error",
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "all" }],
      "no-use-before-define": ["error", { functions: false, classes: true, variables: true }],
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      // Markup only through the DOM (textContent, createElement), never from strings; and no
      // srcdoc frame: a srcdoc document inherits the page's policy, so judged documents are
      // framed from their own URLs, under their own (docs/security.md#html-from-users).
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "Build nodes instead (no markup from strings)." },
        { property: "outerHTML", message: "Build nodes instead (no markup from strings)." },
        { property: "insertAdjacentHTML", message: "Build nodes instead (no markup from strings)." },
        { property: "srcdoc", message: "Frame a document by its URL (its own policy), not srcdoc." },
      ],
      "max-lines": ["error", { max: 600, skipBlankLines: true, skipComments: true }],
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ["tests/js/**/*.mjs", "eslint.config.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.node },
    },
    rules: {
      "no-var": "error",
      "prefer-const": "error",
    },
  },
];
