"""Google's character classes as tables for the native tokenizer.

`_wordpiece_native.c` classifies a code point with two array lookups; this
module computes those arrays from the running Python's `unicodedata`, with
Google's own definitions (`_is_control`, `_is_whitespace`,
`_is_punctuation`, `_is_chinese_char` of `tokenization.py`), and writes them
as a C header. setup.py runs it when it builds the extension, so the tables
are those of the Python that builds (and, wheels being per Python version,
runs) it; the extension records the Unicode version and `tokenization.py`
falls back to the pure-Python tokenizer where it differs from the running
Python's. tests/text/test_native_tokenization.py regenerates the tables and
compares them with the built extension's. It is a build step
(`write_header`), not a program.

Each code point has a class: flags, and the characters that lower-casing
plus accent stripping (`str.lower`, NFD, drop category Mn) turn it into.
Per character this equals Google's per-word result except where a
character's lower case depends on its neighbours (Greek capital sigma,
final form) or NFD would reorder a kept character (a non-Mn character with
a non-zero combining class), or the result holds whitespace: such
characters are flagged `COMPLEX`, and a word holding one is lower-cased by
the pure-Python code.
"""

import sys
import unicodedata

# Flags of a class (the same values as in _wordpiece_native.c).
DROP = 1      # cleaning drops it: NUL, U+FFFD, control (Cc, Cf) but \t\n\r
SPACE = 2     # separates words: whitespace after cleaning (Python's split)
CJK = 4       # a CJK ideograph: a word of its own
PUNCT = 8     # Google's punctuation: a token of its own
COMPLEX = 16  # lower-casing needs its word (see the module docstring)
KEEP = 32     # lower-casing and accent stripping leave it unchanged

BLOCK = 256
CODE_POINTS = sys.maxunicode + 1

_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


def _is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    return any(first <= cp <= last for first, last in _CJK_RANGES)


def _lower_and_strip(char):
    """Google's lower-casing and accent stripping of one character."""
    decomposed = unicodedata.normalize("NFD", char.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def character_class(cp):
    """(flags, lower-cased and stripped characters or None if KEEP)."""
    char = chr(cp)
    flags = 0
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        flags |= DROP
    elif _is_whitespace(char) or char.isspace():
        flags |= SPACE
    if _is_chinese_char(cp):
        flags |= CJK
    if _is_punctuation(char):
        flags |= PUNCT
    lowered = _lower_and_strip(char)
    if (cp == 0x3A3
            or any(c.isspace() for c in lowered)
            or any(unicodedata.combining(c)
                   and unicodedata.category(c) != "Mn"
                   for c in unicodedata.normalize("NFD", char.lower()))):
        flags |= COMPLEX
    if lowered == char:
        return flags | KEEP, None
    return flags, lowered


def build():
    """The tables: a dict of `stage1`, `stage2`, `flags`, `map_start`,
    `map_length` and `map_pool` (lists of ints) and `unidata_version`."""
    classes = {}      # (flags, lowered) -> class index
    blocks = {}       # tuple of 256 class indices -> block index
    stage1 = []
    stage2 = []
    for block_start in range(0, CODE_POINTS, BLOCK):
        block = []
        for cp in range(block_start, block_start + BLOCK):
            key = character_class(cp)
            index = classes.get(key)
            if index is None:
                index = classes[key] = len(classes)
            block.append(index)
        block = tuple(block)
        index = blocks.get(block)
        if index is None:
            index = blocks[block] = len(blocks)
            stage2.extend(block)
        stage1.append(index)
    flags, map_start, map_length, map_pool = [], [], [], []
    for class_flags, lowered in classes:
        flags.append(class_flags)
        map_start.append(len(map_pool))
        map_length.append(0 if lowered is None else len(lowered))
        if lowered is not None:
            map_pool.extend(ord(c) for c in lowered)
    return {"stage1": stage1, "stage2": stage2, "flags": flags,
            "map_start": map_start, "map_length": map_length,
            "map_pool": map_pool or [0],
            "unidata_version": unicodedata.unidata_version}


def _c_array(ctype, name, values):
    lines = []
    for start in range(0, len(values), 16):
        lines.append("    " + ", ".join(
            str(v) for v in values[start:start + 16]) + ",")
    return ("static const %s %s[%d] = {\n%s\n};\n"
            % (ctype, name, len(values), "\n".join(lines)))


def header(tables):
    """The C header of `tables` (from `build`)."""
    assert len(tables["flags"]) < 1 << 16 and len(tables["stage1"]) < 1 << 16
    assert max(tables["map_length"]) < 256
    return "".join([
        "/* Generated by bert_tf/text/native_tables.py; do not edit. */\n",
        '#define UNIDATA_VERSION "%s"\n' % tables["unidata_version"],
        "#define TABLE_BLOCK %d\n" % BLOCK,
        _c_array("uint16_t", "table_stage1", tables["stage1"]),
        _c_array("uint16_t", "table_stage2", tables["stage2"]),
        _c_array("uint8_t", "table_flags", tables["flags"]),
        _c_array("uint32_t", "table_map_start", tables["map_start"]),
        _c_array("uint8_t", "table_map_length", tables["map_length"]),
        _c_array("uint32_t", "table_map_pool", tables["map_pool"]),
    ])


def write_header(path):
    """Writes the header for the running Python to `path`."""
    text = header(build())
    with open(path, "w", encoding="ascii") as file:
        file.write(text)
