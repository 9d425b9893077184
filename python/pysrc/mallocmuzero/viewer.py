"""The game viewer from Python: ``show(game_or_path, compare=None)``.

The page is the one ``mallocmuzero replay GAME --html FILE`` writes (built by the Rust
library): one self-contained HTML file that steps through a saved game, or compares two.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional, Union

from mallocmuzero._native import Program, SavedGame

GameLike = Union[SavedGame, str, "os.PathLike[str]"]


def _saved(game: GameLike) -> SavedGame:
    if isinstance(game, SavedGame):
        return game
    return SavedGame.load(os.fspath(game))


def _in_notebook() -> bool:
    """Whether an IPython kernel (Jupyter) is running this code: the only place where an
    inline display is seen."""
    try:
        from IPython import get_ipython  # type: ignore
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def viewer_html(
    game: GameLike, compare: Optional[GameLike] = None, program: Optional[Program] = None
) -> str:
    """The viewer's HTML text for ``game`` (a ``SavedGame`` or the path of a ``.game``
    file), against ``compare`` when given (another saved game of the same program,
    hardware and game options). ``program``: as for ``SavedGame.replay``."""
    a = _saved(game)
    b = _saved(compare) if compare is not None else None
    return a.viewer_html(compare=b, program=program)


def show(
    game: GameLike,
    compare: Optional[GameLike] = None,
    *,
    path: Optional[Union[str, "os.PathLike[str]"]] = None,
    program: Optional[Program] = None,
    inline: Optional[bool] = None,
):
    """Shows the game viewer of ``game`` (against ``compare`` when given).

    In Jupyter (IPython with a kernel), the page is displayed inline and its
    ``IPython.display.HTML`` object returned. Elsewhere (or with ``inline=False``) the page
    is written to ``path`` (default: a new file in the temporary folder) and its path
    returned, to open in a browser.
    """
    html = viewer_html(game, compare, program)
    if inline is None:
        inline = path is None and _in_notebook()
    if inline:
        from IPython.display import HTML, display  # type: ignore

        # The page runs in an iframe of its own, so that its script and style stay apart
        # from the notebook's and from other viewers in the same notebook.
        escaped = html.replace("&", "&amp;").replace('"', "&quot;")
        frame = HTML(
            f'<iframe srcdoc="{escaped}" style="width:100%;height:980px;border:1px solid #ddd"></iframe>'
        )
        display(frame)
        return frame
    if path is None:
        fd, name = tempfile.mkstemp(prefix="mallocmuzero-viewer-", suffix=".html")
        os.close(fd)
        path = name
    out = Path(path)
    tmp = out.with_name(f".{out.name}.tmp.{os.getpid()}")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
