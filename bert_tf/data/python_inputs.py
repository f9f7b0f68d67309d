"""Python inputs of `bert_tf.finetune` and `load(...).predict`, checked:
each error names the argument and item (`inputs[3]`, `train[0]`).

Shared by the tasks' Python adapters (`bert_tf/tasks/<task>/python_api.py`).
"""

import os


def unicode_text(where, text):
    """`text`, refused if it is not Unicode text that UTF-8 can encode.

    A Python string may hold a lone surrogate ("\\ud800": text decoded
    from broken UTF-16, or with errors="surrogateescape"), which TensorFlow
    refuses deep inside with a message naming no input; this names it.

    Args:
      where: the input, for the message ("inputs[3]", "texts[0]").
      text: a string.

    Raises:
      ValueError: `<where>: ... lone surrogate ...`.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{where}: character {error.start} of {text!r:.60} is a lone "
            f"surrogate {text[error.start]!r}, which is not Unicode text "
            "and cannot be encoded as UTF-8 (was it decoded from broken "
            "UTF-16, or with errors='surrogateescape'?)") from None
    return text


def strings(name, values):
    """`values`, a list of strings (`name` says which argument)."""
    if isinstance(values, (str, bytes)) or not isinstance(values,
                                                          (list, tuple)):
        raise ValueError(f"{name} must be a list of strings, got "
                         f"{type(values).__name__}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"{name}[{i}] must be a string, got "
                             f"{type(value).__name__}")
        unicode_text(f"{name}[{i}]", value)
    return list(values)


def one_text(i, item, what):
    """`inputs[i]`, a string (`what` says what it should be)."""
    if not isinstance(item, str):
        raise ValueError(f"inputs[{i}]: expected {what} (a string), got "
                         f"{item!r:.80}")
    return unicode_text(f"inputs[{i}]", item)


def text_pair(i, item, what):
    """`inputs[i]`, a pair of strings (`what` names them)."""
    if (isinstance(item, (str, bytes)) or not isinstance(item, (list, tuple))
            or len(item) != 2 or not all(isinstance(t, str) for t in item)):
        raise ValueError(f"inputs[{i}]: expected a pair {what} of strings, "
                         f"got {item!r:.80}")
    return tuple(unicode_text(f"inputs[{i}]", text) for text in item)


def word_list(i, item, where="inputs"):
    """A list of words, checked: `where[i]` names it in messages."""
    if isinstance(item, str) or not isinstance(item, (list, tuple)):
        raise ValueError(f"{where}[{i}]: expected a list of words, got "
                         f"{item!r:.80}")
    for word in item:
        if not isinstance(word, str) or not word or word != "".join(
                word.split()):
            raise ValueError(f"{where}[{i}]: word {word!r} must be a "
                             "non-empty string without whitespace")
        unicode_text(f"{where}[{i}]", word)
    return list(item)


def decode(value):
    """A string output of an export (bytes) as text."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def files_and_lists(given, values, names):
    """Sets given as files become the `<phase>_file` settings; the lists
    are returned, each checked to be a non-empty list.

    Raises:
      ValueError: a set is neither, or empty (naming its argument).
    """
    lists = {}
    for phase, data in given.items():
        name = names[phase]
        if isinstance(data, (str, os.PathLike)):
            values[f"{phase}_file"] = os.fspath(data)
            continue
        if not isinstance(data, (list, tuple)):
            raise ValueError(f"finetune: {name} must be a file or a list, "
                             f"got {type(data).__name__}")
        if not data:
            raise ValueError(f"finetune: {name}: no examples")
        lists[phase] = data
    return lists
