// The submit page's code editor: a CodeMirror view over each <textarea data-editor>, which
// stays the form's field (the view writes every change back), so the form posts as before
// and works without JavaScript. Python highlighting, Tab indents (Escape then Tab leaves the
// editor, as CodeMirror's accessibility guide asks), and the chosen problem's template
// filled in while the code is empty or still another problem's template (and emptied when a
// file is chosen instead).
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import {
  bracketMatching,
  defaultHighlightStyle,
  indentOnInput,
  indentUnit,
  syntaxHighlighting,
} from "@codemirror/language";
import { EditorState } from "@codemirror/state";
import {
  EditorView,
  drawSelection,
  highlightActiveLine,
  keymap,
  lineNumbers,
} from "@codemirror/view";

function attach(textarea) {
  const view = new EditorView({
    parent: textarea.parentNode,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        python(),
        keymap.of([indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({
          "aria-label": "Code editor",
          // The field's error, when the form came back with one, is the editor's too.
          ...(textarea.getAttribute("aria-invalid") ? { "aria-invalid": "true" } : {}),
          ...(textarea.getAttribute("aria-describedby")
            ? { "aria-describedby": textarea.getAttribute("aria-describedby") }
            : {}),
          spellcheck: "false",
          autocapitalize: "off",
          autocorrect: "off",
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  textarea.parentNode.insertBefore(view.dom, textarea.nextSibling);
  textarea.hidden = true;
  textarea.dataset.editorAttached = "true";
  view.dom.classList.add("code-editor");
  return view;
}

function setDoc(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}

function wireTemplates(form, view) {
  const select = form.querySelector("select[name=problem]");
  if (!select || !form.dataset.templates) return;
  const templates = JSON.parse(form.dataset.templates);
  const known = new Set(Object.values(templates));
  const fill = () => {
    const current = view.state.doc.toString();
    const template = templates[select.value];
    if (template && (current.trim() === "" || known.has(current))) setDoc(view, template);
  };
  select.addEventListener("change", fill);
  fill();
  // A chosen file is the submission: an untouched template must not count as pasted code
  // beside it (the server refuses a file and pasted code together).
  const file = form.querySelector("input[type=file]");
  file?.addEventListener("change", () => {
    if (file.files.length && known.has(view.state.doc.toString())) setDoc(view, "");
  });
}

for (const textarea of document.querySelectorAll("textarea[data-editor]")) {
  const view = attach(textarea);
  const form = textarea.closest("form");
  if (form) wireTemplates(form, view);
}
