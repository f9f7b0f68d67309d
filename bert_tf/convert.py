r"""Converts BERT checkpoints between Google's and Hugging Face's formats.

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

vocab.txt is copied along. Existing output files are kept unless
--overwrite is given.
"""

import argparse
import sys

from absl import logging


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.convert",
        description="Convert BERT checkpoints between Google's TF1 format and "
                    "Hugging Face safetensors.")
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{hf_to_google,google_to_hf}")

    hf_to_google = commands.add_parser(
        "hf_to_google",
        help="Hugging Face safetensors + config.json -> Google TF1 checkpoint "
             "+ bert_config.json")
    source = hf_to_google.add_mutually_exclusive_group(required=True)
    source.add_argument("--input_dir",
                        help="Hugging Face model directory (model.safetensors "
                             "or model.safetensors.index.json, config.json, "
                             "vocab.txt)")
    source.add_argument("--safetensors",
                        help="a .safetensors file; config.json and vocab.txt "
                             "are looked for next to it")
    hf_to_google.add_argument("--config_file",
                              help="Hugging Face config.json (default: next "
                                   "to the weights)")
    hf_to_google.add_argument("--vocab_file",
                              help="vocab.txt to copy (default: next to the "
                                   "weights)")
    hf_to_google.add_argument("--output_dir", required=True,
                              help="where bert_model.ckpt, bert_config.json "
                                   "and vocab.txt are written")
    hf_to_google.add_argument("--overwrite", action="store_true",
                              help="replace existing output files")
    hf_to_google.add_argument(
        "--exact_gelu", action="store_true",
        help="keep Hugging Face's exact (erf) gelu as hidden_act "
             "'gelu_exact' instead of Google's tanh-approximate 'gelu': "
             "reproduces Hugging Face's outputs, but Google's own code cannot "
             "read that bert_config.json")

    google_to_hf = commands.add_parser(
        "google_to_hf",
        help="Google TF1 checkpoint + bert_config.json -> Hugging Face "
             "model.safetensors + config.json + tokenizer files")
    google_to_hf.add_argument("--checkpoint", required=True,
                              help="checkpoint prefix (.../bert_model.ckpt) "
                                   "or the directory holding it")
    google_to_hf.add_argument("--bert_config_file", required=True,
                              help="Google's bert_config.json")
    google_to_hf.add_argument("--vocab_file",
                              help="vocab.txt to copy (default: next to the "
                                   "checkpoint)")
    google_to_hf.add_argument("--output_dir", required=True,
                              help="where model.safetensors, config.json, "
                                   "vocab.txt and the tokenizer files are "
                                   "written")
    google_to_hf.add_argument("--overwrite", action="store_true",
                              help="replace existing output files")
    google_to_hf.add_argument(
        "--do_lower_case", default="true", choices=("true", "false"),
        help="whether the model is uncased (Google's runners' default: "
             "true); written to tokenizer_config.json and tokenizer.json")
    return parser


def main(argv=None):
    """Runs the command line; returns the process exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.use_absl_handler()
    logging.set_verbosity(logging.INFO)
    # Imported here so that --help does not wait for TensorFlow.
    from bert_tf import checkpoints
    from bert_tf.config import BertConfigError
    try:
        if args.command == "hf_to_google":
            written = checkpoints.convert_hf_to_google(
                args.input_dir or args.safetensors, args.output_dir,
                config_file=args.config_file, vocab_file=args.vocab_file,
                overwrite=args.overwrite, exact_gelu=args.exact_gelu)
        else:
            written = checkpoints.convert_google_to_hf(
                args.checkpoint, args.bert_config_file, args.output_dir,
                vocab_file=args.vocab_file, overwrite=args.overwrite,
                do_lower_case=args.do_lower_case == "true")
    except (checkpoints.ConversionError, checkpoints.CheckpointError,
            BertConfigError) as error:
        print(f"{parser.prog} {args.command}: error: {error}",
              file=sys.stderr)
        return 1
    print(f"Wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
