"""`BertConfig`: Google's `bert_config.json`, read and written unchanged."""

import copy
import json

from bert_tf import file_io

# Google's `modeling.BertConfig` fields and defaults, in its argument order.
DEFAULTS = {
    "vocab_size": None,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 16,
    "initializer_range": 0.02,
}

# "gelu" is Google's tanh approximation; "gelu_exact" (the erf form, Hugging
# Face's "gelu") is bert_tf's addition for converted Hugging Face models.
SUPPORTED_ACTIVATIONS = ("gelu", "relu", "tanh", "linear", "gelu_exact")

# How self-attention is computed (`--attention`; `bert_tf.modeling.
# transformer.set_attention`): "google", Google's einsum, float32 softmax and
# attention-probability dropout; "fused", one `keras.ops.dot_product_attention`
# call (a flash-attention kernel where the backend has one), which has no
# attention-probability dropout.
GOOGLE_ATTENTION = "google"
FUSED_ATTENTION = "fused"
ATTENTION_CHOICES = (GOOGLE_ATTENTION, FUSED_ATTENTION)

_POSITIVE_INTS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob")


class BertConfigError(ValueError):
    """A `bert_config.json` that cannot describe a working BERT."""


class BertConfig:
    """Configuration of a `BertModel`, field for field Google's.

    Keys Google's code does not know (the Chinese model's `pooler_*` and
    `directionality`, Hugging Face's extras) are kept in `extra` and written
    back by `to_dict`/`to_json_file`, so a round trip loses nothing.
    """

    def __init__(self, vocab_size, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072,
                 hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, max_position_embeddings=512,
                 type_vocab_size=16, initializer_range=0.02, source=None,
                 **extra):
        """Builds and validates a config.

        Args:
          vocab_size .. initializer_range: Google's fields and defaults.
          source: where the config came from (a file name), used in errors.
          **extra: unknown keys, kept verbatim.

        Raises:
          BertConfigError: naming the offending field.
        """
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.extra = dict(extra)
        self._source = source
        self.validate()

    @property
    def attention_head_size(self):
        return self.hidden_size // self.num_attention_heads

    def _error(self, field, message):
        where = f"{self._source}: " if self._source else ""
        return BertConfigError(f"{where}bert config field '{field}' {message}")

    def validate(self):
        """Raises `BertConfigError` naming the first field that cannot work."""
        for field in _POSITIVE_INTS:
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self._error(
                    field, f"must be a positive integer, got {value!r}")
            if value <= 0:
                raise self._error(field, f"must be positive, got {value}")
        if self.hidden_size % self.num_attention_heads:
            raise self._error(
                "hidden_size",
                f"({self.hidden_size}) is not a multiple of "
                f"num_attention_heads ({self.num_attention_heads})")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise self._error(
                "hidden_act",
                f"is {self.hidden_act!r}; supported: "
                f"{', '.join(SUPPORTED_ACTIVATIONS)}")
        for field in _PROBABILITIES:
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise self._error(
                    field, f"must be a probability in [0, 1), got {value!r}")
        if (not isinstance(self.initializer_range, (int, float))
                or self.initializer_range <= 0):
            raise self._error(
                "initializer_range",
                f"must be a positive number, got {self.initializer_range!r}")

    def check_max_seq_length(self, max_seq_length):
        """Refuses sequences longer than the position embeddings reach.

        Every program that takes a `--max_seq_length` checks it here, with
        Google's message (its runners' check).

        Raises:
          BertConfigError: `max_seq_length` > `max_position_embeddings`.
        """
        if max_seq_length > self.max_position_embeddings:
            where = f" of {self._source}" if self._source else ""
            raise BertConfigError(
                f"Cannot use sequence length {max_seq_length} because the "
                f"BERT model was only trained up to sequence length "
                f"{self.max_position_embeddings} (--max_seq_length exceeds "
                f"the model's max_position_embeddings{where})")

    def check_fused_attention_trains(self):
        """Refuses to train with `--attention=fused` where this config
        drops attention probabilities.

        The fused op has no attention-probability dropout: training with it
        would train another model than the config describes. Evaluation and
        prediction have no dropout, so they take it with any config.

        Raises:
          BertConfigError: `attention_probs_dropout_prob` is not 0.
        """
        if self.attention_probs_dropout_prob:
            where = f" in {self._source}" if self._source else ""
            raise BertConfigError(
                f"--attention=fused has no attention-probability dropout, "
                f"but attention_probs_dropout_prob is "
                f"{self.attention_probs_dropout_prob:g}{where}: train with "
                f"--attention=google (the default) or with a copy of the "
                f"config whose attention_probs_dropout_prob is 0 (evaluation "
                f"and prediction take --attention=fused with any config)")

    @classmethod
    def from_dict(cls, values, source=None):
        """Builds a config from a dict of Google's JSON keys."""
        if not isinstance(values, dict):
            where = f"{source}: " if source else ""
            raise BertConfigError(
                f"{where}a bert config must be a JSON object, got "
                f"{type(values).__name__}")
        if values.get("vocab_size") is None:
            where = f"{source}: " if source else ""
            raise BertConfigError(
                f"{where}bert config field 'vocab_size' is missing")
        return cls(source=source, **values)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads Google's `bert_config.json`.

        Raises:
          BertConfigError: the file is missing, not JSON, or describes a
            config that cannot work; the message names the file.
        """
        try:
            with open(json_file, "r", encoding="utf-8") as reader:
                text = reader.read()
        except OSError as error:
            raise BertConfigError(
                f"cannot read bert config file {json_file}: "
                f"{error.strerror or error}") from error
        values = file_io.parse_json(text, json_file, BertConfigError)
        return cls.from_dict(values, source=str(json_file))

    def to_dict(self):
        """Google's fields plus every unknown key that was read."""
        values = {field: getattr(self, field) for field in DEFAULTS}
        values.update(copy.deepcopy(self.extra))
        return values

    def to_json_string(self):
        """As Google's: indent 2, sorted keys, trailing newline."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        """Writes the config atomically (temporary name, then rename)."""
        with file_io.atomic_write(json_file) as writer:
            writer.write(self.to_json_string())

    def replace(self, **changes):
        """A copy with some fields changed (validated)."""
        values = self.to_dict()
        values.update(changes)
        return BertConfig.from_dict(values, source=self._source)

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"BertConfig({fields})"
