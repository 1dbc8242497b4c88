"""Glue between the Streamlit pages and the dpcore engine: session state, samples, display helpers."""
