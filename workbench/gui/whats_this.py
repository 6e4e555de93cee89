""" "What's this?" (Shift+F1) on every control: the words for the controls that had none, and the
pass that gives each control its tooltip's words where it has no longer text of its own.

The words sit here, one table by panel and attribute, so they read as one voice and a new
control without words is found by one test (`controls_without_help`).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QFrame,
    QHeaderView,
    QLineEdit,
    QListView,
    QPlainTextEdit,
    QSlider,
    QTextEdit,
    QToolButton,
    QWidget,
)

# panel class name -> attribute -> what the control does
HELP: dict[str, dict[str, str]] = {
    "TrainingControls": {
        "preset": (
            "How text is cut into pre-tokens before merging: gpt2, cl100k and o200k are the "
            "OpenAI patterns; custom regex lets you type your own"
        ),
        "regex": "The pattern in force (type here after choosing custom regex)",
        "specials": (
            "Special tokens, comma-separated (e.g. <|endoftext|>): each gets its own id and is "
            "never merged"
        ),
        "max_token_chars": (
            "The longest token in characters: no merge makes a token of more characters (0: no "
            "cap). Counted on the token's UTF-8 bytes, a character cut in two by a merge counts "
            "as one, so 'é' alone and half of it are each one character. With a cap in bytes "
            "too, both hold"
        ),
        "parity_window": (
            "Parity-aware BPE's moving-window variant (Foroutan et al., 2025): over the last W "
            "merges, a group (language) already chosen more than 2/groups of the time gives way "
            "to the next worst-compressed group, so one hard language cannot take every merge. "
            "0 keeps the paper's greedy rule: each merge helps the worst group. Greyed unless "
            "Parity by is on"
        ),
    },
    "TeachingPanel": {
        "full_speed": "Train at full speed, still showing each merge in the sample as it lands",
    },
    "MergeListPanel": {
        "view": (
            "Every merge of the run: rank (0 is the first), the new token and its id, the two "
            "parts, how often the pair occurred, and the token's length in bytes. Click a "
            "header to sort; select a merge to see its tree below"
        ),
    },
    "CorpusPanel": {
        "cancel": "Stop counting the corpus",
        "preview": "The start of the corpus, cut into pre-tokens by the pattern (each its colour)",
        "top_view": "The most frequent pre-tokens of the corpus, with their counts",
    },
    "TokensPanel": {
        "open_button": "Inspect a tokenizer file (tokenizer.json, vocab.json, .tiktoken, .model)",
        "export_button": "Write this tokenizer in one or more formats and check they read back",
        "share_button": "Save the split text as an HTML page and, beside it, a PNG picture",
    },
    "TokensView": {
        "editor": "Type or paste any text: it is cut with the tokenizer as you type",
        "strip_edit": "The text as tokens: each token its colour, hover one to see its details",
        "ids_box": "Show each token's id",
        "bytes_box": "Show each token's bytes in hex",
        "open_button": "Cut a text file's contents",
    },
    "TokenDetails": {
        "jump_button": "Go to this token's merge in the Training tab's merge list",
        "tree": "How the token is built from bytes, merge by merge",
    },
    "DrillDown": {
        "table": "How often the token occurs in each corpus file",
        "contexts": "Lines of the corpus where the token occurs, the token marked « »",
    },
    "CompareView": {
        "table": "Each tokenizer's token count and bytes per token on the text",
        "runs": "A stored run to add to the comparison",
        "add_run_button": "Add the chosen run to the comparison",
        "add_file_button": "Add a tokenizer file to the comparison",
        "remove_button": "Remove the selected tokenizer (the first stays)",
    },
    "EvaluateTab": {
        "run_button": "Cut the held-out text with every ticked tokenizer and compare them",
        "cancel_button": "Stop the evaluation",
        "export_button": "Save the results as one HTML page",
        "health_box": "Also list tokens never or rarely used on the held-out text",
        "curves_box": "Also draw bytes per token against vocabulary size for each ticked run",
        "metrics_view": "Tokens, bytes per token and more for each tokenizer; click to sort",
        "group_choice": "Which group of the held-out text (a file, a language) to show",
        "health_view": "The chosen list of tokens, for the chosen tokenizer",
        "health_tokenizer": "The tokenizer whose token health is shown",
        "health_list": "Which list: tokens never used, used rarely, or the longest",
    },
    "TokenizerPicker": {
        "runs": "Tick runs to evaluate; k evaluates a run's first k merges only",
        "files": "Tokenizer files to evaluate",
        "add_file_button": "Add a tokenizer file (tokenizer.json, vocab.json, .tiktoken, .model)",
    },
    "TextPicker": {
        "paths": "Held-out files or folders: text the tokenizers were not trained on",
        "add_files": "Add held-out text files",
        "add_folder": "Add a folder of held-out text files",
        "clear_paths": "Remove every held-out file",
        "pasted": "Or paste held-out text here",
        "group_by": "Report by file, or by a field of JSONL records (e.g. a language)",
        "field": "The JSONL field to group by",
    },
    "ComparePanel": {
        "a": "Tokenizer A: a stored run or a reference (gpt2, cl100k, o200k)",
        "b": "Tokenizer B, compared with A merge by merge",
        "compare_button": (
            "Compare A and B at k merges: where their merge lists first part, how much of the "
            "first k merges they share, and (with held-out text) which tokens explain the "
            "difference in token counts"
        ),
        "cancel_button": "Stop the comparison under way",
        "credits": "The tokens that save the most tokens on the held-out text, and their merge",
        "cuts": "Places where A and B cut the held-out text differently, most frequent first",
        "only_a": "Tokens A has within its first k merges that B has not",
        "only_b": "Tokens B has within its first k merges that A has not",
    },
    "PlanPanel": {
        "tied_box": (
            "The model shares one matrix for input embeddings and the output layer (fewer "
            "parameters; the same FLOPs per token)"
        ),
        "plan_button": (
            "Price every vocabulary size k of the ticked runs by FLOPs per byte of the held-out "
            "text, and star the cheapest"
        ),
        "cancel_button": "Stop the planning under way",
    },
}

_CONTROLS = (
    QAbstractButton,
    QLineEdit,
    QComboBox,
    QAbstractSpinBox,
    QSlider,
    QAbstractItemView,
    QPlainTextEdit,
    QTextEdit,
)


def _is_qt_internal(widget: QWidget) -> bool:
    """Parts Qt makes itself: headers, corner and scroll buttons, a combo's popup list, a
    line edit's clear button."""
    if isinstance(widget, QHeaderView) or widget.objectName().startswith(("qt_", "Scroll")):
        return True
    parent = widget.parent()
    if isinstance(widget, QListView) and isinstance(parent, QFrame):
        return isinstance(parent.parent(), QComboBox)
    return isinstance(widget, QToolButton) and isinstance(parent, QLineEdit)


def controls(root: QWidget) -> list[QWidget]:
    """Every control a person can point at under `root`."""
    found = [w for w in root.findChildren(QWidget) if isinstance(w, _CONTROLS)]
    return [w for w in found if not _is_qt_internal(w)]


def fill(root: QWidget) -> None:
    """Give every control under `root` its words: from `HELP` where it had none, and its
    tooltip's words as its What's this? text."""
    for panel in root.findChildren(QWidget):
        for attribute, text in HELP.get(type(panel).__name__, {}).items():
            widget = getattr(panel, attribute, None)
            if isinstance(widget, QWidget):
                if not widget.toolTip():
                    widget.setToolTip(text)
                if not widget.whatsThis():
                    widget.setWhatsThis(text)
    for widget in controls(root):
        if not widget.whatsThis() and widget.toolTip():
            widget.setWhatsThis(widget.toolTip())


def controls_without_help(root: QWidget) -> list[str]:
    """The controls still without What's this? words (for the test that keeps it so)."""
    missing = []
    for widget in controls(root):
        if not widget.whatsThis():
            text = widget.text() if isinstance(widget, (QAbstractButton, QLineEdit)) else ""
            missing.append(f"{type(widget.parent()).__name__}/{type(widget).__name__} {text!r}")
    return missing
