"""The colours of the ids one screen draws: apart while the palette has room, and said when it runs out."""

from loop.views.parts import ID_COLOURS, id_colour, screen_colours


def test_ids_drawn_together_never_share_a_colour_while_the_palette_has_room():
    ids = [f"toolu_{i:02d}" for i in range(40)]
    assert len({id_colour(i) for i in ids[:len(ID_COLOURS)]}) < len(ID_COLOURS)  # their own colours clash
    for n in range(1, len(ID_COLOURS) + 1):
        colours = screen_colours(ids[:n])
        assert len(set(colours.values())) == n, colours
    # The first id keeps its own colour, and an id keeps its colour as later ones are added (a step adds rows).
    first = screen_colours(ids[:3])
    assert first[ids[0]] == id_colour(ids[0])
    assert {i: c for i, c in screen_colours(ids[:6]).items() if i in first} == first
    # Once the palette has run out, every colour is still used.
    assert set(screen_colours(ids).values()) == set(ID_COLOURS)
