"""A config field that is also a program's flag: its help and choices.

A recipe's config is a dataclass whose fields are the program's flags. Each
field that is a flag says so with `setting(default, help)`; the program's
flags are made from the fields (`bert_tf.runners.flags.define_config_flags`:
the name, the type from the annotation, the default, the help), so each
default is written once. A field made with plain `dataclasses.field` or a
bare default (e.g. `label_list`, given only from Python) is no flag.
"""

import dataclasses


def setting(default, help, *, choices=None):  # noqa: A002 (absl's word)
    """A dataclass field that is a flag.

    Args:
      default: the field's and the flag's default.
      help: the flag's help text.
      choices: for a string field, the values it may take (an enum flag).

    Returns:
      A `dataclasses.field`.
    """
    metadata = {"help": help}
    if choices is not None:
        metadata["choices"] = tuple(choices)
    return dataclasses.field(default=default, metadata=metadata)


_SAME = object()


def override(config_class, name, default=_SAME, *, help=None,  # noqa: A002
             help_suffix=""):
    """`config_class`'s `setting` of field `name`, for a program whose
    default or help differs from the shared one (run_squad.py's
    `--max_seq_length=384`).

    Args:
      config_class: a config class that has the field.
      name: the field's name.
      default: the new default (default: the same).
      help: the new help (default: the same).
      help_suffix: added to the help (why this default).
    """
    field = {field.name: field
             for field in dataclasses.fields(config_class)}[name]
    return setting(field.default if default is _SAME else default,
                   (help or field.metadata["help"]) + help_suffix,
                   choices=field.metadata.get("choices"))


def not_a_flag(config_class, name):
    """`config_class`'s field `name`, kept for the shared code but no flag
    of the program (run_squad.py has no `--do_eval`)."""
    field = {field.name: field
             for field in dataclasses.fields(config_class)}[name]
    return dataclasses.field(default=field.default)


def is_flag(field):
    """Whether a config field is one of its program's flags."""
    return "help" in field.metadata


def values(config, names):
    """{name: `config.<name>`} for each of `names`: the settings a config
    hands on, field for field, to another object's keyword arguments."""
    return {name: getattr(config, name) for name in names}
