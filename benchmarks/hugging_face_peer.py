"""Hugging Face's PyTorch BERT as a prediction peer, served to another process.

`benchmarks/prediction.py --hf_python=PYTHON` starts this script with a
Python that has `torch` (CPU) and `transformers` (it needs neither
TensorFlow nor bert_tf), so that Hugging Face's prediction joins the
alternation of the other contenders call by call:

    PYTHON benchmarks/hugging_face_peer.py REQUEST.json

REQUEST.json holds the model's shape (`num_layers`, `hidden_size`,
`num_attention_heads`, `intermediate_size`, `vocab_size`), `num_labels`,
`seq_length`, `batch_size`, `vocab_file` and `texts` (`[text_a, text_b or
null]`). The script builds `BertForSequenceClassification` with random
weights (the work does not depend on them), tokenizes the texts once with
`BertTokenizerFast` (truncated to `seq_length`, not padded), predicts once
untimed, prints `ready`, then for each `run` line on stdin predicts every
text and prints the seconds it took. Prediction is what Hugging Face's
`Trainer.predict` does with its default collator: batches in input order,
each padded by `DataCollatorWithPadding` to its longest text, the model
under `torch.inference_mode()`, on all of the machine's CPU threads.
"""

import json
import os
import sys
import time


def main():
    import torch
    import transformers

    with open(sys.argv[1], encoding="utf-8") as reader:
        request = json.load(reader)
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count())
    config = transformers.BertConfig(
        vocab_size=request["vocab_size"],
        hidden_size=request["hidden_size"],
        num_hidden_layers=request["num_layers"],
        num_attention_heads=request["num_attention_heads"],
        intermediate_size=request["intermediate_size"],
        max_position_embeddings=max(512, request["seq_length"]),
        num_labels=request["num_labels"])
    model = transformers.BertForSequenceClassification(config).eval()
    tokenizer = transformers.BertTokenizerFast(
        vocab_file=request["vocab_file"], do_lower_case=True)
    texts = request["texts"]
    encoded = [tokenizer(text_a, text_b, truncation=True,
                         max_length=request["seq_length"])
               for text_a, text_b in texts]
    collator = transformers.DataCollatorWithPadding(tokenizer,
                                                    return_tensors="pt")
    batch_size = request["batch_size"]

    def predict():
        logits = []
        with torch.inference_mode():
            for start in range(0, len(encoded), batch_size):
                batch = collator(encoded[start:start + batch_size])
                logits.append(model(**batch).logits)
        return torch.cat(logits)

    predict()
    print(f"ready torch {torch.__version__} transformers "
          f"{transformers.__version__} threads {torch.get_num_threads()}",
          flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        predict()
        print(time.perf_counter() - start, flush=True)


if __name__ == "__main__":
    main()
