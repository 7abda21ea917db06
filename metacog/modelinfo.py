"""Who is who: vendor, family and reasoning flags for every model in Atlas, Battery and the local panel.

Paper 1 traces an apparent calibration signal on maths to reasoning models that
solve the problem inline when asked for confidence, so the book needs to know
which models reason. The table lives in ``metacog/data_files/model_metadata.csv``
(package data, written by hand). Columns:

* ``model`` the id as the dataset spells it (Atlas ids without the '@...' suffix,
  Battery canonical names, 'local/<name>'), ``dataset`` ('atlas', 'battery', 'local');
* ``model_key`` one id per underlying model, shared across datasets (the Atlas id,
  or the Hugging Face id for local models), to join Atlas and Battery;
* ``family``, ``vendor``;
* ``reasoning_mode``: 'always' (a dedicated reasoning model), 'default_on' (hybrid,
  thinks unless told not to), 'optional' (hybrid, thinks only when asked), 'none';
* ``reasoning`` (bool): the model reasons before answering by default (mode
  'always' or 'default_on'); ``reasoning_trained`` (bool): it has a reasoning mode
  at all (mode != 'none');
* ``twin``: the reasoning / non-reasoning counterpart *in the same dataset*, if
  any; ``twin_exact``: True when the two were released as a pair on one base
  (Qwen3-Next Instruct/Thinking), False for looser pairs (DeepSeek R1 / V3.2);
* ``verified``: True when the flag comes from documentation of that exact model
  known to us; False when inferred from the family (newer models);
* ``source``: where each flag comes from, in words.

The logs do not record whether thinking was switched on for hybrid models; the
flags describe the models' defaults, not the runs.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

DATASETS = ("atlas", "battery", "local")
MODES = ("always", "default_on", "optional", "none")
COLUMNS = ["model", "dataset", "model_key", "family", "vendor", "reasoning", "reasoning_mode",
           "reasoning_trained", "twin", "twin_exact", "verified", "source"]
_BOOL = ("reasoning", "reasoning_trained", "twin_exact", "verified")


def _read() -> pd.DataFrame:
    ref = resources.files("metacog").joinpath("data_files/model_metadata.csv")
    with ref.open("r", encoding="utf-8") as f:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
    if list(df.columns) != COLUMNS:
        raise ValueError(f"model_metadata.csv: columns {list(df.columns)} differ from {COLUMNS}.")
    for col in _BOOL:
        bad = ~df[col].isin(["True", "False"])
        if bad.any():
            raise ValueError(f"model_metadata.csv: column {col!r} must be True/False; row "
                             f"{df.index[bad][0] + 2} has {df.loc[bad, col].iloc[0]!r}.")
        df[col] = df[col] == "True"
    for col, allowed in [("dataset", DATASETS), ("reasoning_mode", MODES)]:
        bad = ~df[col].isin(allowed)
        if bad.any():
            raise ValueError(f"model_metadata.csv: {col} must be one of {allowed}; row "
                             f"{df.index[bad][0] + 2} has {df.loc[bad, col].iloc[0]!r}.")
    for col in ("model", "model_key", "family", "vendor", "source"):
        empty = df[col].str.strip() == ""
        if empty.any():
            raise ValueError(f"model_metadata.csv: column {col!r} is empty in row {df.index[empty][0] + 2}.")
    return df


def model_metadata(dataset: str | None = None) -> pd.DataFrame:
    """The model metadata table (see the module docstring), optionally for one dataset."""
    df = _read()
    if dataset is not None:
        if dataset not in DATASETS:
            raise ValueError(f"model_metadata: dataset {dataset!r} is not one of {DATASETS}.")
        df = df[df["dataset"] == dataset].reset_index(drop=True)
    return df


def lookup(models, dataset: str | None = None) -> pd.DataFrame:
    """Metadata rows for ``models`` in the given order (Atlas '@...' suffixes are stripped).

    Raises ValueError naming any model not in the table (or ambiguous across datasets
    when ``dataset`` is not given).
    """
    if isinstance(models, str):
        models = [models]
    ids = [str(m).split("@", 1)[0] for m in models]
    table = model_metadata(dataset)
    dup = table["model"].duplicated(keep=False)
    if dup.any():
        raise ValueError(f"lookup: model ids {sorted(set(table.loc[dup, 'model']))} appear in several "
                         "datasets; pass dataset=.")
    missing = [m for m in ids if m not in set(table["model"])]
    if missing:
        where = f"dataset {dataset!r}" if dataset else "any dataset"
        raise ValueError(f"lookup: {missing} not in the model metadata for {where}; add rows to "
                         "metacog/data_files/model_metadata.csv.")
    return table.set_index("model").loc[ids].reset_index()
