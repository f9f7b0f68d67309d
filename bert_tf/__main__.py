"""`python -m bert_tf`: the list of bert_tf's programs.

Google's command lines are the scripts at the repository's root, with
Google's names and flags (`python run_classifier.py ...`). bert_tf's own
programs are modules run as `python -m <module>`, each with `--help`; this
is the one list of them. Each program defines its flags in
`define_flags(flag_values)` and ends a run on bad input with
`<program>: error: <message>` (`bert_tf.cli`).
"""

import ast
import importlib.util

# Google's root scripts, then the bert_tf extensions beside them.
SCRIPTS = (
    "run_pretraining", "run_classifier", "run_squad",
    "create_pretraining_data", "extract_features",
    "run_tagging", "run_multiple_choice", "create_pretraining_data_beam",
    "export_saved_model",
)

# The `python -m` programs.
MODULES = (
    "bert_tf.convert",
    "bert_tf.learn_vocab",
    "bert_tf.prepare_corpus",
    "bert_tf.corpora.rotten_tomatoes",
    "bert_tf.corpora.task_corpora",
)


def summary(module_name):
    """The first line of a module's docstring, read without importing it
    (several import TensorFlow); "" where the module is not found."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return ""
    with open(spec.origin, encoding="utf-8") as source:
        docstring = ast.get_docstring(ast.parse(source.read())) or ""
    return docstring.strip().split("\n\n")[0].replace("\n", " ")


def program_list():
    """The text `python -m bert_tf` prints."""
    scripts = [f"{name}.py" for name in SCRIPTS]
    modules = [f"python -m {name}" for name in MODULES]
    width = max(map(len, scripts + modules))
    lines = ["Google's command lines (the repository's root scripts, "
             "`python <script>.py --help`):"]
    lines += [f"  {command:<{width}}  {summary(name)}".rstrip()
              for command, name in zip(scripts, SCRIPTS)]
    lines += ["", "bert_tf's programs (`python -m <module> --help`):"]
    lines += [f"  {command:<{width}}  {summary(name)}".rstrip()
              for command, name in zip(modules, MODULES)]
    return "\n".join(lines)


if __name__ == "__main__":
    from bert_tf import startup
    startup.print_for_a_reader(program_list())
