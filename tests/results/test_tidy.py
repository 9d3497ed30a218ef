from allennlp_tune.rundir.tidy import tidy_run_dir


def touch(path, size=10):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def names(directory):
    return sorted(path.name for path in directory.iterdir())


def test_tidy_removes_checkpoints_and_own_cache_only(tmp_path):
    run = tmp_path / "run"
    for name in ("model_state_epoch_3.th", "training_state_epoch_3.th", "model_state_e2_b0.th",
                 "training_state_e2_b40.th", "best.th", "model.tar.gz", "my_weights.th",
                 "metrics.json", "out.log"):  # fmt: skip
        touch(run / name)
    touch(run / "feature_cache" / "ab" / "abc.f16", size=2**20)
    shared = tmp_path / "shared_cache"
    touch(shared / "cd" / "cde.f16")

    tidied = tidy_run_dir(run)

    assert names(run) == ["metrics.json", "model.tar.gz", "my_weights.th", "out.log"]
    assert tidied["freed_mb"] == 1.0
    assert sorted(tidied["removed"]) == sorted([
        "model_state_epoch_3.th", "training_state_epoch_3.th", "model_state_e2_b0.th",
        "training_state_e2_b40.th", "best.th", "feature_cache",
    ])  # fmt: skip
    assert (shared / "cd" / "cde.f16").is_file()


def test_best_weights_stay_without_an_archive_unless_dropped(tmp_path):
    run = tmp_path / "run"
    touch(run / "best.th")
    touch(run / "model_state_e0_b0.th")
    assert tidy_run_dir(run)["removed"] == ["model_state_e0_b0.th"]
    assert names(run) == ["best.th"]
    assert tidy_run_dir(run, drop_weights=True)["removed"] == ["best.th"]
    assert tidy_run_dir(run) == {"removed": [], "freed_mb": 0.0}


def test_a_symlinked_cache_is_not_followed(tmp_path):
    shared = tmp_path / "shared_cache"
    touch(shared / "ab" / "abc.f16")
    run = tmp_path / "run"
    run.mkdir()
    (run / "feature_cache").symlink_to(shared, target_is_directory=True)
    assert tidy_run_dir(run)["removed"] == []
    assert (shared / "ab" / "abc.f16").is_file()
