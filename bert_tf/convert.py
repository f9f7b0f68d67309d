r"""Converts BERT checkpoints between Google's format and Hugging Face's or
keras-hub's.

Hugging Face (safetensors + config.json) -> Google (TF1 checkpoint +
bert_config.json, as in Google's released zips):

  python -m bert_tf.convert hf_to_google \
      --input_dir=path/to/hf_model --output_dir=path/to/google_model

  (or --safetensors=path/to/model.safetensors; config.json and vocab.txt are
  taken from the same directory unless --config_file/--vocab_file say
  otherwise)

Google -> Hugging Face (model.safetensors + config.json):

  python -m bert_tf.convert google_to_hf \
      --checkpoint=path/to/uncased_L-12_H-768_A-12/bert_model.ckpt \
      --bert_config_file=path/to/uncased_L-12_H-768_A-12/bert_config.json \
      --output_dir=path/to/hf_model

Google -> keras-hub preset (BertBackbone.from_preset(dir),
BertTextClassifier.from_preset(dir, num_classes=...); needs keras-hub, the
`hf` extra):

  python -m bert_tf.convert google_to_keras_hub \
      --checkpoint=path/to/uncased_L-12_H-768_A-12/bert_model.ckpt \
      --bert_config_file=path/to/uncased_L-12_H-768_A-12/bert_config.json \
      --output_dir=path/to/keras_hub_preset

keras-hub preset -> Google:

  python -m bert_tf.convert keras_hub_to_google \
      --input_dir=path/to/keras_hub_preset --output_dir=path/to/google_model

vocab.txt is copied along. Existing output files are kept unless
--overwrite is given (a preset directory is replaced only when it holds
nothing but the files google_to_keras_hub writes, at any depth: a file of
yours, in assets/ too, is named and kept).
"""

from absl import flags
from absl import logging

from bert_tf import cli

PROGRAM = "python -m bert_tf.convert"
COMMANDS = ("hf_to_google", "google_to_hf", "google_to_keras_hub",
            "keras_hub_to_google")


def define_flags(flag_values):
    """Defines the flags of both commands on `flag_values`."""
    flags.DEFINE_string(
        "input_dir", None,
        "hf_to_google: Hugging Face model directory (model.safetensors or "
        "model.safetensors.index.json, config.json, vocab.txt); "
        "keras_hub_to_google: the keras-hub preset directory.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "safetensors", None,
        "hf_to_google: a .safetensors file (instead of --input_dir); "
        "config.json and vocab.txt are looked for next to it.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "config_file", None,
        "hf_to_google: Hugging Face config.json (default: next to the "
        "weights).", flag_values=flag_values)
    flags.DEFINE_bool(
        "exact_gelu", False,
        "hf_to_google: keep Hugging Face's exact (erf) gelu as hidden_act "
        "'gelu_exact' instead of Google's tanh-approximate 'gelu': "
        "reproduces Hugging Face's outputs, but Google's own code cannot "
        "read that bert_config.json.", flag_values=flag_values)
    flags.DEFINE_string(
        "checkpoint", None,
        "google_to_hf, google_to_keras_hub: checkpoint prefix "
        "(.../bert_model.ckpt) or the directory holding it.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "bert_config_file", None,
        "google_to_hf, google_to_keras_hub: Google's bert_config.json.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "vocab_file", None,
        "vocab.txt to copy (default: next to the weights or checkpoint).",
        flag_values=flag_values)
    flags.DEFINE_string(
        "output_dir", None,
        "Where the converted files are written (hf_to_google: "
        "bert_model.ckpt, bert_config.json, vocab.txt; google_to_hf: "
        "model.safetensors, config.json, vocab.txt; google_to_keras_hub: "
        "the preset directory; keras_hub_to_google: as hf_to_google).",
        flag_values=flag_values)
    flags.DEFINE_bool("overwrite", False, "Replace existing output files.",
                      flag_values=flag_values)
    flags.DEFINE_bool(
        "do_lower_case", True,
        "google_to_hf, google_to_keras_hub: whether the model is uncased "
        "(Google's runners' default: true); written to the tokenizer "
        "files.", flag_values=flag_values)


def run(command, flag_values):
    """Runs one command; returns what `convert_*` returns (paths written).

    Raises:
      ValueError: a missing or contradictory flag, naming it; and the
        conversion's errors (ConversionError, CheckpointError,
        BertConfigError), which name the file at fault.
    """
    if command not in COMMANDS:
        raise ValueError(
            f"the command must be one of {', '.join(COMMANDS)}, got "
            f"{command!r}")
    if not flag_values.output_dir:
        raise ValueError("--output_dir is required")
    # Imported here so that --help does not wait for TensorFlow.
    from bert_tf import checkpoints
    if command == "hf_to_google":
        if bool(flag_values.input_dir) == bool(flag_values.safetensors):
            raise ValueError(
                "hf_to_google needs exactly one of --input_dir and "
                "--safetensors")
        return checkpoints.convert_hf_to_google(
            flag_values.input_dir or flag_values.safetensors,
            flag_values.output_dir, config_file=flag_values.config_file,
            vocab_file=flag_values.vocab_file,
            overwrite=flag_values.overwrite,
            exact_gelu=flag_values.exact_gelu)
    if command == "keras_hub_to_google":
        if not flag_values.input_dir:
            raise ValueError("keras_hub_to_google needs --input_dir (the "
                             "preset directory)")
        return checkpoints.convert_keras_hub_to_google(
            flag_values.input_dir, flag_values.output_dir,
            overwrite=flag_values.overwrite)
    for name in ("checkpoint", "bert_config_file"):
        if not flag_values[name].value:
            raise ValueError(f"{command} needs --{name}")
    if command == "google_to_keras_hub":
        return checkpoints.convert_google_to_keras_hub(
            flag_values.checkpoint, flag_values.bert_config_file,
            flag_values.output_dir, vocab_file=flag_values.vocab_file,
            overwrite=flag_values.overwrite,
            do_lower_case=flag_values.do_lower_case)
    return checkpoints.convert_google_to_hf(
        flag_values.checkpoint, flag_values.bert_config_file,
        flag_values.output_dir, vocab_file=flag_values.vocab_file,
        overwrite=flag_values.overwrite,
        do_lower_case=flag_values.do_lower_case)


def main(argv=None):
    """Runs the command line (`<command> --flag=...`).

    Args:
      argv: the arguments without the program name (default: sys.argv[1:]).

    Returns:
      0 once the files are written. A bad flag or input exits with status
      1 and a message naming it (`cli.exit_with_error`).
    """
    flag_values, commands = cli.parse_flags(PROGRAM, define_flags, argv,
                                            positional=True)
    if len(commands) != 1:
        cli.exit_with_error(
            PROGRAM, f"give one command, {' or '.join(COMMANDS)}, then its "
                     f"flags (got {' '.join(commands) or 'none'})")
    logging.use_absl_handler()
    logging.set_verbosity(logging.INFO)
    written = cli.run_or_exit(f"{PROGRAM} {commands[0]}", run, commands[0],
                              flag_values)
    print(f"Wrote {written}")
    return 0


if __name__ == "__main__":
    from bert_tf import startup
    startup.quiet_start()  # before anything imports TensorFlow
    main()
