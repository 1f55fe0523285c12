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
      // Markup only through the DOM (textContent, createElement), never from strings; a
      // sandboxed frame's srcdoc is the one exception (a property, not parsed by the page).
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "Build nodes instead (no markup from strings)." },
        { property: "outerHTML", message: "Build nodes instead (no markup from strings)." },
        { property: "insertAdjacentHTML", message: "Build nodes instead (no markup from strings)." },
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
