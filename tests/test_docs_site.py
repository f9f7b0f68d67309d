"""The documentation: the MkDocs site builds with its links checked, and
the results experiments/README.md quotes are its results files' own words.

`mkdocs build --strict` fails on a link to a missing page or anchor, a page
left out of the navigation, or a malformed configuration; it runs when
MkDocs is installed (the "docs" extra) and is skipped, saying so,
otherwise. The experiments' README copies its results tables between
`<!-- begin results/NAME -->` and `<!-- end results/NAME -->` markers; the
reference is the file the experiment wrote, so a table typed in or left
stale after a rerun fails here.
"""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
EXPERIMENTS = REPO_ROOT / "experiments"
QUOTE = re.compile(r"<!-- begin (results/[^ ]+) -->\n(.*?)\n<!-- end \1 -->",
                   re.S)


def test_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip('MkDocs is not installed (pip install -c constraints.txt '
                    '-e ".[docs]")')
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
         str(tmp_path / "site")], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "performance" / "index.html").exists()


def test_every_docs_page_is_in_the_navigation():
    configuration = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"^  - [^:]+: (\S+\.md)$", configuration, re.M))
    pages = {path.name for path in (REPO_ROOT / "docs").glob("*.md")}
    assert listed == pages


def test_experiments_readme_quotes_its_results_files():
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    quotes = QUOTE.findall(readme)
    assert {name for name, _ in quotes} == {
        "results/results.md", "results/chinese_tagging.md",
        "results/feature_based_ner.md"}
    for name, quoted in quotes:
        written = (EXPERIMENTS / name).read_text(encoding="utf-8")
        assert quoted == written.rstrip("\n"), (
            f"experiments/README.md's copy of {name} differs from the file")


def test_experiments_readme_links_existing_files():
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((results/[^)#]+)\)", readme):
        assert (EXPERIMENTS / target).exists(), target
