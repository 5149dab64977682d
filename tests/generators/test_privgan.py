"""privGAN for tables and its plain-GAN baseline: partitions, the privacy discriminator, the loss,
the encoding from public knowledge, spec conformance and seeding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from privacy_gate.data import conform
from privacy_gate.errors import ConfigError
from privacy_gate.generators import create_generator, generator_capabilities
from privacy_gate.generators.privgan import generator_loss, partition, wrong_labels
from privacy_gate.generators.tabular_codec import MISSING, TabularCodec
from privacy_gate.spec import DatasetSpec

FAST = {"epochs": 3, "batch_size": 64, "hidden": (32,), "latent_dim": 8, "log_every": 100}


@pytest.fixture(scope="module")
def adult_small(adult_full, adult_spec):
    df = conform(adult_full.iloc[:900], adult_spec, source="adult")
    return df.iloc[:600], df.iloc[600:]


@pytest.mark.parametrize("n,parts", [(10, 3), (600, 4), (7, 7), (1001, 2)])
def test_partitions_are_disjoint_and_cover(n, parts):
    chunks = partition(n, parts, np.random.default_rng(1))
    joined = np.concatenate(chunks)
    assert len(chunks) == parts and sorted(joined.tolist()) == list(range(n))
    assert max(map(len, chunks)) - min(map(len, chunks)) <= 1


def test_wrong_labels_never_name_the_generator_itself():
    g = torch.Generator().manual_seed(0)
    for i in range(4):
        labels = wrong_labels(i, 2000, 4, g)
        assert not (labels == i).any() and set(labels.tolist()) == set(range(4)) - {i}


def test_zero_lambda_is_the_sum_of_plain_gan_losses_and_lambda_adds_the_privacy_term():
    torch.manual_seed(0)
    d_logits = [torch.randn(32, 1) for _ in range(3)]
    dp_logits = [torch.randn(32, 3) for _ in range(3)]
    targets = [wrong_labels(i, 32, 3, torch.Generator().manual_seed(i)) for i in range(3)]
    plain = sum(F.binary_cross_entropy_with_logits(d, torch.ones_like(d)) for d in d_logits)
    assert torch.allclose(generator_loss(d_logits, dp_logits, targets, 0.0), plain)
    assert torch.allclose(generator_loss(d_logits, None, None, 5.0), plain)
    privacy = sum(F.cross_entropy(dp_logits[i], targets[i]) for i in range(3))
    assert torch.allclose(generator_loss(d_logits, dp_logits, targets, 2.5), plain + 2.5 * privacy)


def test_privacy_discriminator_pretraining_beats_chance(adult_small, adult_spec):
    train, reference = adult_small
    gen = create_generator(
        "privgan",
        seed=3,
        n_generators=4,
        privacy_pretrain_epochs=60,
        **{**FAST, "hidden": (128, 128), "epochs": 1},
    ).fit(train, adult_spec, reference=reference)
    assert gen.privacy_pretrain_accuracy_ > 1 / 4 + 0.15


def test_output_conforms_to_the_spec_and_the_same_seed_gives_the_same_release(
    adult_small, adult_spec
):
    train, reference = adult_small
    torch_state, np_state = torch.get_rng_state().clone(), np.random.get_state()[1].copy()
    a = create_generator("privgan", seed=7, n_generators=2, **FAST).fit(
        train, adult_spec, reference=reference
    )
    b = create_generator("privgan", seed=7, n_generators=2, **FAST).fit(
        train, adult_spec, reference=reference
    )
    sa, sb = a.sample(300), b.sample(300)
    pd.testing.assert_frame_equal(sa, sb)
    assert not sa.equals(a.sample(300, seed=8))
    # the global RNGs are untouched: seeding is local to the generator
    assert torch.equal(torch_state, torch.get_rng_state()) and np.array_equal(
        np_state, np.random.get_state()[1]
    )
    out = conform(sa, adult_spec, source="privgan sample")
    assert list(out.columns) == list(adult_spec.columns) and len(out) == 300
    for name, col in adult_spec.columns.items():
        if col.min is not None:
            assert out[name].min() >= col.min and out[name].max() <= col.max, name
        if col.categories is not None:
            assert set(out[name].dropna()) <= set(map(str, col.categories)), name
    assert len(a.history_) == FAST["epochs"] and len(a.parts_) == 2


def test_plain_gan_is_privgan_with_one_generator_and_no_privacy_loss(adult_small, adult_spec):
    train, reference = adult_small
    gan = create_generator("gan", seed=1, **FAST).fit(train, adult_spec, reference=reference)
    assert gan.n_generators == 1 and gan.privacy_weight == 0 and gan.privacy_discriminator_ is None
    assert gan.privacy_pretrain_accuracy_ is None and all(h["dp_loss"] == 0 for h in gan.history_)
    scores = gan.discriminator_scores(train.iloc[:50])
    assert scores.shape == (50,) and np.all((scores >= 0) & (scores <= 1))
    assert not generator_capabilities("privgan").differentially_private


def test_too_many_generators_for_the_rows_is_a_config_error(adult_small, adult_spec):
    train, reference = adult_small
    with pytest.raises(ConfigError, match="n_generators=400"):
        create_generator("privgan", n_generators=400, **FAST).fit(
            train.iloc[:500], adult_spec, reference=reference
        )


def test_codec_takes_ranges_and_categories_from_the_spec_or_reference_never_train():
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                "x": {"kind": "numeric"},
                "c": {"kind": "categorical"},
                "o": {"kind": "ordinal", "min": 1, "max": 5},
            },
        }
    )
    reference = pd.DataFrame({"x": [0.0, 10.0], "c": ["a", "b"], "o": [1, 5]})
    codec = TabularCodec.from_spec(spec, reference=reference)
    assert codec.ranges["x"] == (0.0, 10.0) and codec.categories["c"] == ["a", "b", MISSING]
    assert any("reference" in n for n in codec.notes)
    train_only = pd.DataFrame(
        {"x": [100.0], "c": ["a"], "o": [3]}
    )  # outside the public range: clipped
    X = codec.encode(train_only)
    assert X[0, 0] == 1.0
    codec.encode(
        pd.DataFrame({"x": [1.0], "c": ["zzz"], "o": [2]})
    )  # a category the reference lacks
    assert any("outside the reference's categories" in n for n in codec.notes)
    strict = TabularCodec.from_spec(
        DatasetSpec.model_validate(
            {
                "name": "t",
                "columns": {"c": {"kind": "categorical", "categories": ["a"], "nullable": False}},
            }
        ),
        reference=None,
    )
    with pytest.raises(ConfigError, match="'c'"):
        strict.encode(pd.DataFrame({"c": ["zzz"]}))
    with pytest.raises(ConfigError, match="no min/max"):
        TabularCodec.from_spec(spec, reference=None)
    back = codec.decode(X, np.random.default_rng(0), sample_categories=False)
    assert back.loc[0, "x"] == 10.0 and back.loc[0, "c"] == "a" and back.loc[0, "o"] == 3
