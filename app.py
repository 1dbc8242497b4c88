"""The design card's entry point: ``streamlit run app.py`` from a checkout opens DP Studio as ``dpstudio`` does.

The server settings come from ``.streamlit/config.toml``, which is ``dpstudio/streamlit.toml``
(the file ``dpstudio`` passes as flags), so both ways of opening the app run with the same settings.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parent / "dpstudio" / "app.py"), run_name="__main__")
