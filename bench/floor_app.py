"""The floor of a click: a one-button Streamlit app (bench/render.py times it beside Loopscope's pages).

`streamlit run bench/floor_app.py`. A click of Step reruns the script and
changes one heading, "Step k of n": the least any Streamlit page does for a
click, in the same browser, on the same machine, at the same moment.
"""

import streamlit as st

if "k" not in st.session_state:
    st.session_state.k = 1


def _forward() -> None:
    st.session_state.k += 1


def _back() -> None:
    st.session_state.k = max(1, st.session_state.k - 1)


st.button("Step", key="floor-step", on_click=_forward)
st.button("Back", key="floor-back", on_click=_back)
st.markdown(f"### Step {st.session_state.k} of 1000000")
