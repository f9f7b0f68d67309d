"""The one list of fine-tuning tasks, and what each declares (`TaskSpec`).

Each task folder declares its spec in `spec.py` (`SPEC = TaskSpec(...)`):
its names, its program and recipe, how `bert_tf.finetune`'s Python lists
become the recipe's examples, how `load(run).predict` predicts a training
run's inputs (the recipe's prediction phase on them, on any Keras
backend), and its export (`bert_tf/tasks/<task>/export.py`) with how a
SavedModel's inputs become its columns and its rows the results.
`bert_tf.api`, `export_saved_model.py` and `python -m bert_tf` read this
list; nothing outside a task's folder names a task. Adding a task is a folder and a line in `TASK_SPECS` (or a
`register(spec)` call, for a task kept outside bert_tf): see
docs/adding-a-task.md.

The spec modules import nothing heavy; each hook imports its task's
modules when it runs, so reading the list costs no TensorFlow.
"""

import dataclasses
import importlib
from typing import Callable, Optional, Tuple

# The modules that declare the built-in tasks' specs, in the order the
# program list and the messages name them.
TASK_SPECS = (
    "bert_tf.tasks.classification.spec",
    "bert_tf.tasks.squad.spec",
    "bert_tf.tasks.tagging.spec",
    "bert_tf.tasks.multiple_choice.spec",
)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What bert_tf needs to know about one fine-tuning task.

    Attributes:
      name: the task's name: `bert_tf.finetune(task=...)`, the `task` of the
        run description its recipe writes (`bert_tf_run.json`) and
        `export_saved_model.py --task_name`.
      program: the command line that runs its recipe (e.g.
        "run_squad.py").
      recipe: `recipe()` -> the recipe module: `run(config, **examples)`
        and `PROGRAM`.
      config_class: `config_class()` -> the recipe's config dataclass
        (each field a flag of `program`, `bert_tf.finetuning.fields`).
      python_examples: `python_examples(given, values, base, names)` ->
        the recipe's keyword arguments (`train_examples=...`) from
        `bert_tf.finetune`'s lists; `given` {phase: list or file}, `values`
        the config's fields so far (it may set some, e.g. `<phase>_file`
        for a file), `base` the `load`ed base model, `names` {phase: the
        argument's name, for messages}.
      predictor: `predictor(run)` -> `predict(inputs)`, the results of
        `load(run).predict` for a training run's `--output_dir` (`run` a
        `bert_tf.api.FineTunedModel` with its `description`), on any Keras
        backend: the inputs (a list, checked: errors name `inputs[i]`)
        made the recipe's examples and features, the run's task predicting
        them (`bert_tf.finetuning.run_prediction.RunPrediction`) and
        post-processing its state as the recipe does for its files.
      serves: `serves(input_names, output_names)` -> whether a
        `serving_default` signature with these names is this task's export.
      columns: `columns(inputs, input_names)` -> {export input: list} of
        `predict`'s inputs to a SavedModel, checked (errors name
        `inputs[i]`).
      results: `results(rows, count, labels)` -> one result dict per input
        from the export's output rows ({output: numpy rows}).
      export_from_flags: `export_from_flags(flag_values, common)` -> the
        export `export_saved_model.py --task_name=<name>` writes.
      run_kinds: the run-description kinds it serves (default: `name`).
      aliases: other names `finetune` and `export_saved_model.py` take for
        it (run_classifier.py's GLUE task names).
      export_names: the `export_saved_model.py --task_name` values that
        export it (default: `name`).
      finetune_aliases: how `finetune` runs an alias:
        `finetune_aliases(alias, sets, settings)` -> settings, raising
        ValueError where it takes no lists.
      default_max_seq_length: `export_saved_model.py`'s default
        `--max_seq_length` for it (its program's).
      finetune_sets: optional `finetune_sets(sets, settings)` ->
        `(sets, names)`: `finetune`'s train/dev/test by phase when they
        are not the phases of the same names, and {phase: argument name}.
      summary: one line for `python -m bert_tf`.
    """
    name: str
    program: str
    recipe: Callable
    config_class: Callable
    python_examples: Optional[Callable]
    predictor: Callable
    serves: Callable
    columns: Callable
    results: Callable
    export_from_flags: Callable
    run_kinds: Tuple[str, ...] = ()
    aliases: Tuple[str, ...] = ()
    export_names: Tuple[str, ...] = ()
    finetune_aliases: Optional[Callable] = None
    finetune_sets: Optional[Callable] = None
    default_max_seq_length: int = 128
    summary: str = ""

    def kinds(self):
        """The run-description kinds this task serves."""
        return self.run_kinds or (self.name,)

    def exported_as(self):
        """`export_saved_model.py --task_name` values of this task."""
        return self.export_names or (self.name,)


# `hook`, `attribute`, `module` and `specs` are the only places bert_tf
# imports a module by name; each lazy callable keeps that name in
# `lazy_module` so tests can check it is a bert_tf module, never a program.

def hook(module, name):
    """The function `module.name`, imported when it is first called (a spec
    names its hooks so: reading the list imports none of them)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args,
                                                              **kwargs)
    call.__name__ = name
    call.__qualname__ = f"{module}.{name}"
    call.lazy_module = module
    return call


def attribute(module, name):
    """`module.name` (a class, a module's constant), imported when called:
    `attribute(m, "SquadConfig")()`."""
    def call():
        return getattr(importlib.import_module(module), name)
    call.lazy_module = module
    return call


def module(name):
    """The module `name`, imported when called."""
    def call():
        return importlib.import_module(name)
    call.lazy_module = name
    return call


def folder_spec(package, *, name, program, config_class, **settings):
    """The `TaskSpec` of a task folder laid out as the built-in ones are:
    `<package>.recipe` (the recipe, with the config class
    `config_class`), `<package>.python_api` (`python_examples`,
    `predictor`, `serves`, `columns`, `results`) and `<package>.export`
    (`export_from_flags`).

    Args:
      package: the folder's package, e.g. "bert_tf.tasks.squad".
      name: the task's name.
      program: its command line, e.g. "run_squad.py".
      config_class: the name of the recipe's config class.
      **settings: the spec's other fields (`aliases`, `summary`, ...); a
        string where a hook is expected names a function of
        `<package>.python_api`.

    Returns:
      A `TaskSpec`.
    """
    recipe, python_api, export = (f"{package}.{part}" for part in (
        "recipe", "python_api", "export"))
    hooks = {field: hook(python_api, value)
             for field, value in settings.items()
             if field in _OPTIONAL_HOOKS and isinstance(value, str)}
    return TaskSpec(
        name=name, program=program, recipe=module(recipe),
        config_class=attribute(recipe, config_class),
        python_examples=hook(python_api, "python_examples"),
        predictor=hook(python_api, "predictor"),
        serves=hook(python_api, "serves"),
        columns=hook(python_api, "columns"),
        results=hook(python_api, "results"),
        export_from_flags=hook(export, "export_from_flags"),
        **{**settings, **hooks})


# The optional hooks `folder_spec` takes by their python_api function name.
_OPTIONAL_HOOKS = ("finetune_aliases", "finetune_sets")


_registered = []


def register(spec):
    """Adds a task kept outside bert_tf (e.g. in your own package) to the
    list, after the built-in ones.

    Raises:
      ValueError: a task of that name (or alias) is already registered.
    """
    taken = {name for known in specs() for name in (
        known.name, *known.aliases, *known.kinds())}
    for name in (spec.name, *spec.aliases, *spec.kinds()):
        if name in taken:
            raise ValueError(f"a task named {name!r} is already registered")
    _registered.append(spec)


def unregister(name):
    """Removes a task `register` added (tests; a built-in task stays)."""
    _registered[:] = [spec for spec in _registered if spec.name != name]


def specs():
    """Every task's `TaskSpec`: the built-in ones, then the registered."""
    return [importlib.import_module(module).SPEC
            for module in TASK_SPECS] + list(_registered)


def names():
    """Every task name `finetune` takes, the specs' names first."""
    every = specs()
    return ([spec.name for spec in every]
            + [alias for spec in every for alias in spec.aliases])


def get(name):
    """The spec whose name or alias is `name` (case-insensitive).

    Raises:
      KeyError: no such task.
    """
    name = str(name).lower()
    for spec in specs():
        if name == spec.name or name in spec.aliases:
            return spec
    raise KeyError(name)


def of_run_kind(kind):
    """The spec serving a run description's `task` kind, or None."""
    for spec in specs():
        if kind in spec.kinds():
            return spec
    return None


def of_export_name(name):
    """The spec `export_saved_model.py --task_name=<name>` exports, or
    None."""
    for spec in specs():
        if name in spec.exported_as():
            return spec
    return None


def run_kinds():
    """Every run-description kind some task serves."""
    return tuple(kind for spec in specs() for kind in spec.kinds())
