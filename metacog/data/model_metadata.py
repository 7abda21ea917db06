"""Who is who: vendor, family and reasoning flags for every model in Atlas, Battery, the 84-model
MMLU-Pro calibration study and the local panel.

Paper 1 traces an apparent calibration signal on maths to reasoning models that
solve the problem inline when asked for confidence, so the book needs to know
which models reason. The table lives in ``metacog/data_files/model_metadata.csv``
(package data, written by hand). Columns:

* ``model`` the id as the dataset spells it (Atlas ids without the '@...' suffix,
  Battery canonical names, 'local/<name>', the calibration study's file names), ``dataset``
  ('atlas', 'battery', 'local', 'calibration_study');
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

Atlas and Battery do not record whether thinking was switched on for hybrid models; there the
flags describe the models' defaults, not the runs. The calibration study names its runs
('Qwen3-8B' and 'Qwen3-8B-think' are the same weights with thinking off and on), so its flags
describe the run; they are inferred from those names (``verified`` False) and checked against
the recorded output lengths (see ``source``).
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

DATASETS = ("atlas", "battery", "local", "calibration_study")
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


def flags_for(models, dataset: str | None = None) -> pd.DataFrame:
    """The reasoning flag of each of ``models`` where the table has one, NA where it has none.

    Models are matched in ``dataset`` when given (and it is one of :data:`DATASETS`), else in
    any dataset where the name is unique; Atlas '@...' suffixes are stripped. Returns one row
    per model, in order: model, reasoning (True/False/NA), twin ('' when none), twin_exact,
    verified, found (False when the table has no row for it).
    """
    table = model_metadata()
    if dataset in DATASETS:
        table = table[table["dataset"] == dataset]
    table = table.drop_duplicates("model", keep=False).set_index("model")
    rows = []
    for m in models:
        key = str(m).split("@", 1)[0]
        if key in table.index:
            r = table.loc[key]
            rows.append({"model": m, "reasoning": bool(r["reasoning"]), "twin": r["twin"],
                         "twin_exact": bool(r["twin_exact"]), "verified": bool(r["verified"]), "found": True})
        else:
            rows.append({"model": m, "reasoning": pd.NA, "twin": "", "twin_exact": False,
                         "verified": False, "found": False})
    return pd.DataFrame(rows, columns=["model", "reasoning", "twin", "twin_exact", "verified", "found"])
