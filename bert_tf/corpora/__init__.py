"""Real data that pip packages ship, written as task files: the Rotten
Tomatoes reviews (`rotten_tomatoes`), a Wikipedia sample as a pretraining
corpus (`wikipedia`), tagging and multiple-choice corpora (`task_corpora`);
`package_files` finds a file inside an installed package."""
