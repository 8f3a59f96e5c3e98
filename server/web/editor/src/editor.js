// The submit page's code editor: a CodeMirror view over each <textarea data-editor>, which
// stays the form's field (the view writes every change back), so the form posts as before
// and works without JavaScript. Python highlighting; Tab and Shift+Tab move focus as in any
// other field and never change the code (a keyboard user must not be trapped, nor lose a
// line's indentation by passing through); Ctrl+] and Ctrl+[ (Cmd on a Mac) indent and
// unindent, Enter keeps the line's indentation; lines scroll sideways rather than wrapping,
// so code never breaks mid-token on a narrow screen; and the chosen problem's template
// filled in while the code is empty or still another problem's template (and emptied when a
// file is chosen instead).
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
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
  const described = [textarea.getAttribute("aria-describedby"), textarea.dataset.keys]
    .filter(Boolean)
    .join(" ");
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
        keymap.of([...defaultKeymap, ...historyKeymap]),
        // Through the view's own attributes: it rewrites its element's class on updates.
        EditorView.editorAttributes.of({ class: "code-editor" }),
        EditorView.contentAttributes.of({
          "aria-label": "Code editor",
          // The field's error, when the form came back with one, is the editor's too.
          ...(textarea.getAttribute("aria-invalid") ? { "aria-invalid": "true" } : {}),
          // So is the note on its keys (data-keys names it).
          ...(described ? { "aria-describedby": described } : {}),
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
