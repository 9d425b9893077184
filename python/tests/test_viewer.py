"""mallocmuzero.show: the game viewer from Python, the same page as `replay --html`."""

import json
import sys
import types

import pytest

import mallocmuzero as mmz


@pytest.fixture(scope="module")
def games(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("viewer")
    for workload, player in [("unet", "greedy"), ("unet", "xla"), ("alexnet", "greedy")]:
        cli("play", "--workload", workload, "--player", player, "--save", d)
    return d


def test_show_writes_the_command_lines_page(cli, games, tmp_path):
    game = games / "unet-tpu-v4i-like-greedy-0.game"
    out = mmz.show(game, path=tmp_path / "mine.html")
    assert out == tmp_path / "mine.html"
    cli("replay", game, "--html", tmp_path / "cli.html")
    assert out.read_text(encoding="utf-8") == (tmp_path / "cli.html").read_text(encoding="utf-8")
    # The page carries the game: every turn, with its action.
    html = out.read_text(encoding="utf-8")
    data = html.split('id="mmz-data">', 1)[1].split("</script>", 1)[0]
    view = json.loads(data)["a"]
    saved = mmz.SavedGame.load(game)
    assert view["turns"]["action"] == saved.actions().tolist()
    assert view["player"] == "greedy" and view["workload"] == "unet"


def test_show_compares_two_games(cli, games, tmp_path):
    a, b = games / "unet-tpu-v4i-like-greedy-0.game", games / "unet-tpu-v4i-like-xla-0.game"
    out = mmz.show(mmz.SavedGame.load(a), compare=b, path=tmp_path / "cmp.html")
    cli("replay", a, "--compare", b, "--html", tmp_path / "cli.html")
    assert out.read_text(encoding="utf-8") == (tmp_path / "cli.html").read_text(encoding="utf-8")
    assert '"mode":"compare"' in out.read_text(encoding="utf-8")


def test_show_displays_inline_in_a_notebook(games, monkeypatch):
    shown = []
    display = types.ModuleType("IPython.display")

    class HTML:
        def __init__(self, data):
            self.data = data

    display.HTML = HTML
    display.display = shown.append
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace(kernel=object())
    ipython.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    frame = mmz.show(games / "unet-tpu-v4i-like-greedy-0.game")
    assert shown == [frame]
    assert frame.data.startswith("<iframe srcdoc=") and "mmz-data" in frame.data


def test_show_outside_a_notebook_returns_a_file(games):
    out = mmz.show(games / "unet-tpu-v4i-like-greedy-0.game", inline=False)
    try:
        assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    finally:
        out.unlink()


def test_games_of_other_programs_are_refused(games):
    with pytest.raises(mmz.Error, match="alexnet-tpu-v4i-like-greedy-0.game"):
        mmz.show(games / "unet-tpu-v4i-like-greedy-0.game", compare=games / "alexnet-tpu-v4i-like-greedy-0.game", inline=False)
