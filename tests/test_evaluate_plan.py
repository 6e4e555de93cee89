"""The vocabulary-size planner: the cost formula on hand-computed cases, the grid, the argmin
against a brute force over every k, and `eval --plan` on a real run (bytes/token growing with k,
the full k equal to eval's own figure, one-line usage errors)."""

from __future__ import annotations

import json
import math

import pytest

from workbench.cli import main
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError
from workbench.evaluate import plan


def test_formula_by_hand():
    tiny = plan.ServingModel(width=4, layers=1, context=8)
    assert tiny.n == 12 * 1 * 4 * 4 == 192
    # 2·192 (weights) + 2·1·8·4 (attention over the context) + 2·4·10 (output layer)
    assert tiny.flops_per_token(10) == 384 + 64 + 80 == 528
    assert tiny.parameters(10) == 192 + 2 * 10 * 4  # untied: input and output matrices
    tied = plan.ServingModel(width=4, layers=1, context=8, tied=True)
    assert tied.parameters(10) == 192 + 10 * 4
    assert tied.flops_per_token(10) == 528  # tying saves parameters, not FLOPs
    gpt2 = plan.ServingModel(768, 12, 1024, tied=True)
    assert gpt2.n == 84_934_656
    assert gpt2.flops_per_token(50257) == 169_869_312 + 18_874_368 + 77_194_752
    assert gpt2.parameters(50257) == 84_934_656 + 50257 * 768  # GPT-2 small: about 124 M
    given = plan.ServingModel(4, 1, 8, non_embedding=1000)
    assert given.n == 1000 and given.flops_per_token(0) == 2000 + 64
    assert plan.layers_for(84_934_656, 768) == 12 and plan.layers_for(5, 768) == 1
    point = plan.Point(5, 261, 2.0, 528, 1)
    assert point.flops_per_byte == 264.0


@pytest.mark.parametrize(
    "bad", [{"width": 0}, {"layers": 0}, {"context": -1}, {"non_embedding": 0}]
)
def test_bad_model_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        plan.ServingModel(**bad)


def test_grid():
    assert plan.grid(0) == [0]
    assert plan.grid(100, 6) == [0, 9, 50, 100]
    ks = plan.grid(50_000)
    assert ks[0] == 0 and ks[-1] == 50_000 and ks == sorted(set(ks)) and 40 <= len(ks) <= 48
    assert plan.grid(10) == list(range(11))


def chain(n: int) -> Tokenizer:
    """n merges that make a, aa, aaa, … (each k a distinct prefix)."""
    return Tokenizer.from_merges([(b"a" * i, b"a") for i in range(1, n + 1)], "gpt2")


@pytest.mark.parametrize("scale", [7.0, 40.0, 400.0, 5000.0])
def test_argmin_matches_brute_force(scale):
    """A made-up compression curve with one dip in cost: the grid + ternary search finds the
    same k as trying every k."""
    tok = chain(600)
    model = plan.ServingModel(width=64, layers=2, context=128)

    def bytes_per_token(t: Tokenizer) -> float:
        return 1.0 + 3.0 * (1.0 - math.exp(-len(t.merges) / scale))

    result = plan.plan_tokenizer(tok, model, bytes_per_token)
    cost = [model.flops_per_token(256 + k) / bytes_per_token(tok.prefix(k)) for k in range(601)]
    want = min(range(601), key=lambda k: (cost[k], k))
    assert result["best"]["k"] == want
    assert result["best_is_last"] == (want == 600)
    assert result["best"]["flops_per_byte"] == pytest.approx(cost[want])
    assert len(result["points"]) < 80  # measured far fewer than 601 prefixes


def test_cancelled():
    from workbench.engine.errors import CancelledError

    with pytest.raises(CancelledError):
        plan.plan_tokenizer(chain(50), plan.ServingModel(), lambda t: 1.0, cancelled=lambda: True)


@pytest.fixture(scope="module")
def run_db(corpora, tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    db = folder / "runs.db"
    code = main(["train", str(corpora / "taylorswift.txt"), "--vocab-size", "500", "--db", str(db),
                 "--out-dir", str(folder / "out"), "--quiet"])  # fmt: skip
    assert code == 0
    return db


def test_eval_plan_on_a_real_run(run_db, corpora, tmp_path, capsys):
    out = tmp_path / "plan.json"
    held = corpora / "tinyshakespeare.txt"
    code = main(["eval", "--db", str(run_db), "--tokenizer", "run:1", "--tokenizer", "run:1@100",
                 str(held), "--plan", "--width", "64", "--layers", "2", "--context", "256",
                 "--tied", "--json", str(out), "-q"])  # fmt: skip
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "vocabulary-size plan: d=64, L=2, ctx=256" in printed and "← cheapest" in printed
    data = json.loads(out.read_text("utf-8"))
    p = data["plan"]
    assert p["model"]["tied"] is True and p["model"]["n"] == 12 * 2 * 64 * 64
    full, cut = p["tokenizers"]
    values = [pt["bytes_per_token"] for pt in full["points"]]
    ks = [pt["k"] for pt in full["points"]]
    assert ks == sorted(ks) and ks[0] == 0 and ks[-1] == 244
    assert values[0] == 1.0  # bytes alone: one token per byte
    # more merges compress this text more (sanity on real text, not a law of BPE)
    assert all(b >= a - 1e-9 for a, b in zip(values, values[1:], strict=False))
    assert values[-1] == data["tokenizers"][0]["total"]["bytes_per_token"]  # eval's own figure
    for pt in full["points"]:
        assert pt["vocab_size"] == 256 + pt["k"]
        assert pt["flops_per_byte"] == pytest.approx(pt["flops_per_token"] / pt["bytes_per_token"])
    best = min(full["points"], key=lambda pt: pt["flops_per_byte"])
    assert full["best"]["flops_per_byte"] == best["flops_per_byte"]
    assert cut["points"][-1]["k"] == 100
    assert p["cheapest"] in ("run:1", "run:1@100")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--width", "0"], "--width must be at least 1"),
        (["--plan-points", "0"], "--plan-points must be at least 1"),
        (["--params", "-5"], "--params must be at least 1"),
    ],
)
def test_eval_plan_usage_errors(run_db, corpora, capsys, extra, said):
    code = main(["eval", "--db", str(run_db), "--tokenizer", "run:1", "--plan",
                 str(corpora / "tinystories_sample.txt"), "-q", *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1


def test_eval_plan_needs_text(run_db, capsys):
    code = main(["eval", "--db", str(run_db), "--tokenizer", "run:1", "--plan", "--health", "-q"])
    assert code == 2 and "--plan: give held-out text" in capsys.readouterr().err


def test_params_alone_sets_the_layers(run_db, corpora, capsys):
    code = main(["eval", "--db", str(run_db), "--tokenizer", "run:1", "--plan", "--params",
                 str(12 * 3 * 64 * 64), "--width", "64", "--plan-points", "8",
                 str(corpora / "tinystories_sample.txt"), "-q"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "d=64, L=3," in out and f"N={12 * 3 * 64 * 64:,}" in out
