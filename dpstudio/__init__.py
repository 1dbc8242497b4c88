"""DP Studio, the browser workbench over :mod:`dpcore`: its Streamlit app and the glue beside it.

``dpstudio`` (or ``python -m dpstudio``) opens the app; :mod:`dpstudio.support` turns engine
results into what the pages show. Nothing in :mod:`dpcore` imports this package.
"""
