"""A long assistant answer with a fact deep inside, for the long-record tests (docs/retrieval.md#long-records)."""

from __future__ import annotations

# An assistant's long answer (about 1,950 characters, 430 WordPiece tokens): the fact sits past the first
# 256 tokens (~1,120 characters), the only part the memory's own vector reads.
PARAGRAPHS = [
    "Sure, here is a plan for your week in Lisbon. On the first morning take the number 28 tram from "
    "Martim Moniz up to the castle; it is crowded after ten, so go early and buy a day ticket at the kiosk.",
    "For lunch the cafes around Largo do Carmo serve grilled sardines and a simple salad; prices are lower "
    "one street back from the square, and most places close their kitchens between three and seven.",
    "In the afternoon walk down through Chiado to the river and follow the waterfront west towards "
    "Cais do Sodre, where the market hall has dozens of stalls under one roof and long shared tables.",
    "The second day suits Belem: the monastery opens at ten, the tower queue is shorter late in the day, "
    "and the custard tarts near the tram stop are worth the wait even when the line reaches the corner.",
    "If the weather turns, the tile museum is a quiet indoor choice, and the bus from the centre takes "
    "about twenty minutes; the cafe in its cloister is calm and the garden behind it is rarely full.",
    "For the evening, book a table in Alfama if you want fado; the smaller houses start after nine and "
    "ask for a minimum spend rather than a cover charge, so read the menu by the door before you sit.",
    "You also asked about the family news from your last message: your sister Ingrid adopted a "
    "three-legged greyhound called Biscuit from the animal shelter in Leeds, and he sleeps on her sofa.",
    "On the third day a train from Rossio reaches Sintra in forty minutes; buy the return ticket before "
    "you board, start with the palace on the hill, and keep the gardens for the cooler afternoon.",
    "Pack light layers: mornings by the river are cool and windy, afternoons in the old town are warm, "
    "and the cobbled streets are slippery after rain, so shoes with a good grip matter more than style.",
    "Finally, the airport metro line is the cheapest way back; allow an hour from the centre with luggage, "
    "since the change at Alameda involves long corridors and the escalators there are often closed.",
]
LONG = " ".join(PARAGRAPHS)
FACT = LONG.index("your sister Ingrid")
QUESTION = "Which dog did the user's sibling take home from a rescue centre?"
SHORT = [
    "Bought oat milk, rice and batteries at the corner shop.",
    "The dentist moved the check-up to Thursday at four.",
    "Renewed the car insurance for another year.",
]
