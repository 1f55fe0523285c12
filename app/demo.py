# ruff: noqa: E501  (the demo documents below are prose, one per line)
"""The demo database behind ``heapjudge serve --demo``: created once, then reused.

Three queries with 20-24 short documents each, written for this demo (not taken from any
collection), short judging guidelines, an admin, two assessors, and tasks of both methods. The imported ``grade`` is the
author's own judgment (0 Bad .. 4 Perfect) so simulated assessors have something to agree with.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from app.kernel.db import Database
from app.kernel.models import Collection, User

DEMO_COLLECTION = "Demo: everyday questions"
DEMO_LOGINS: tuple[tuple[str, str, str], ...] = (
    ("admin", "demo-admin", "admin"),
    ("alice", "demo-alice", "assessor"),
    ("bob", "demo-bob", "assessor"),
)

# Each query: (query_id, query, description, documents); each document line is
# "grade | title | text" with the author's own grade (0 Bad .. 4 Perfect).
DEMO_QUERIES: tuple[tuple[str, str, str, str], ...] = (
    (
        "coffee",
        "brewing better coffee at home",
        "Practical advice for making better-tasting coffee with ordinary kitchen equipment.",
        """
4 | Grind just before brewing | Ground coffee goes stale within minutes; a burr grinder used right before brewing keeps the aroma.
4 | Water temperature for pour-over | Aim for water just off the boil, around 92 to 96 °C; hotter water extracts bitter compounds.
4 | The 1:16 ratio | Start with one gram of coffee per sixteen grams of water and adjust to taste.
4 | French press in four minutes | Steep coarse grounds for four minutes, press slowly, and pour at once so it does not over-extract.
3 | Why your coffee tastes sour | Sourness usually means under-extraction: grind finer or brew a little longer.
3 | Why your coffee tastes bitter | Bitterness points to over-extraction: grind coarser, shorten the brew or lower the temperature.
3 | Filtered water matters | Very hard or chlorinated tap water dulls flavour; a simple jug filter helps.
3 | Storing beans | Keep beans in an airtight, opaque container at room temperature, not in the fridge.
3 | Blooming the grounds | Pour a little water first and wait thirty seconds so trapped gas escapes before the main pour.
3 | Buying fresh beans | Look for a roast date within the last few weeks rather than a best-before date.
2 | Cleaning the coffee maker | Old oils turn rancid; rinse equipment daily and descale the machine monthly.
2 | Moka pot basics | Fill the basket without tamping and take the pot off the heat as soon as it gurgles.
2 | Cold brew overnight | Steep coarse coffee in cold water for twelve to eighteen hours, then filter.
1 | Milk frothing without a machine | Shake warm milk in a closed jar, then microwave it briefly to set the foam.
1 | A short history of the coffee house | Coffee houses spread across Europe in the seventeenth century as places of debate.
1 | Coffee and sleep | Caffeine has a half-life of about five hours, so an afternoon cup can delay sleep.
1 | Arabica and robusta | Robusta has more caffeine and a harsher taste; most specialty coffee is arabica.
1 | Decaf processes | Decaffeination uses water, solvents or carbon dioxide to remove most of the caffeine.
0 | Tea brewing temperatures | Green tea prefers water around 80 °C while black tea tolerates boiling water.
1 | Choosing a kettle | An electric kettle with a temperature dial is convenient for many hot drinks.
0 | Coffee cake recipe | A cinnamon crumb cake traditionally served with coffee, though it contains none.
0 | Growing coffee plants indoors | Coffee plants make glossy houseplants but rarely fruit indoors.
""",
    ),
    (
        "bike-chain",
        "how to fix a bicycle chain that keeps slipping",
        "The chain jumps or skips under load; the reader wants to diagnose and repair it.",
        """
4 | Worn chain, worn cassette | A stretched chain skips on a worn cassette; measure chain wear with a checker tool.
4 | Adjusting indexing | Turn the barrel adjuster a quarter turn at a time until the chain sits quietly on each cog.
4 | Stiff links cause skipping | Backpedal slowly and watch the derailleur; a link that jumps is stiff and needs flexing.
4 | Measuring chain stretch | Twelve full links should measure 12 inches; replace the chain at 0.75 percent wear.
3 | Bent derailleur hanger | A knock can bend the hanger so shifting drifts; a shop can realign it with a gauge.
3 | Cable tension after a new cable | New cables stretch during the first rides; re-tension them after a week.
3 | Cleaning and lubricating | Grit and dry links make a chain noisy and sluggish; clean, dry, then oil each roller.
3 | Chain length check | A chain that is too long can slap and drop in the small cogs.
3 | Worn chainring teeth | Shark-fin shaped teeth on the chainring mean it no longer holds the chain under load.
2 | Quick links | Most modern chains join with a quick link that opens with special pliers.
2 | Replacing a chain step by step | Count links on the old chain, break the new one to length and join it.
2 | Single-speed chain tension | On a single-speed bike the chain should move about a centimetre up and down.
2 | Freewheel that slips | If pedals spin freely without driving the wheel, the freewheel pawls may be sticking.
1 | Tools for a home workshop | A chain tool, hex keys and a pump cover most roadside and home repairs.
0 | Choosing a commuting bike | Fenders, lights and a rack matter more than weight for daily commuting.
0 | Fixing a flat tyre | Find the puncture, check the tyre for the cause, then patch or replace the tube.
0 | Brake pad wear | Replace rim brake pads when the grooves are gone.
0 | Tyre pressure guide | Wider tyres run well at lower pressures and give more grip.
0 | Cycling in the rain | Brake earlier and avoid painted road markings, which become slippery.
1 | History of the safety bicycle | The chain-driven safety bicycle replaced the high-wheeler in the 1880s.
""",
    ),
    (
        "sourdough",
        "keeping a sourdough starter alive",
        "Feeding, storing and reviving a sourdough starter.",
        """
4 | Feeding schedule | At room temperature feed the starter once or twice a day with equal weights of flour and water.
4 | Storing in the fridge | Refrigerated starter needs feeding only weekly; bring it to room temperature before baking.
4 | Reviving a neglected starter | Discard most of it and feed twice a day for a few days until it doubles reliably.
4 | Hooch on top | A grey liquid on top means the starter is hungry; pour it off and feed.
3 | Signs of a healthy starter | It doubles within a few hours of feeding and smells pleasantly sour.
3 | Mould or not | Pink or orange streaks mean contamination; throw the starter away.
3 | Which flour to feed | Whole grain rye ferments vigorously; white flour gives a milder starter.
3 | Drying starter for backup | Spread starter thinly on paper, let it dry and keep the flakes in a jar.
2 | Water and chlorine | Heavy chlorination can slow a starter; let tap water stand or use filtered water.
2 | Temperature and activity | A warm kitchen speeds fermentation; a cool one slows it down.
2 | Using the discard | Discarded starter makes good pancakes and crackers.
2 | Starting a starter from scratch | Mix flour and water and feed daily; expect activity after three to seven days.
1 | Basic sourdough loaf | Mix, fold several times, shape, proof overnight in the fridge and bake hot.
1 | Scoring bread | A quick decisive cut lets the loaf expand in the oven.
1 | Yeast versus sourdough | Commercial yeast is faster; sourdough adds flavour and keeps longer.
0 | Baking stones and steel | A preheated stone or steel improves oven spring.
0 | Gluten free baking | Gluten free breads need binders such as psyllium husk.
0 | Pizza dough in a day | A same-day pizza dough with instant yeast.
0 | Kombucha scoby care | A kombucha culture also needs regular feeding with sweet tea.
2 | Cleaning the starter jar | Move the starter to a clean jar now and then to keep crust off the sides.
3 | Vacation care | Before a long trip feed a stiff starter and refrigerate it.
""",
    ),
)


#: The demo collection's judging guidelines: the panel that opens on an assessor's first visit
#: to a task of the collection (docs/assessor-guide.md).
DEMO_GUIDELINES = """\
**Judge for the person who asked.** Each query is an everyday question; a good document helps
someone act on it now.

- *Pairwise pages*: pick the document that answers the question better. Use **=** only when
  you really cannot choose (where ties are on), and **N** for a document that does not answer
  the question at all (where offered).
- *Five-grade pages*: **Perfect** answers the question fully; **Excellent** and **Good**
  answer most or part of it; **Fair** is on the topic but hardly helps; **Bad** is off topic.
- Judge the content, not the writing style or the length. Mark a document that does not show
  properly as broken (**B**) instead of judging it.
"""


def demo_ndjson() -> bytes:
    """The demo collection as NDJSON (the import format)."""
    lines: list[str] = []
    for qid, query, description, block in DEMO_QUERIES:
        rows = [line.split(" | ", 2) for line in block.strip().splitlines()]
        for i, (grade, title, text) in enumerate(rows, start=1):
            record: dict[str, Any] = {
                "query_id": qid,
                "query": query,
                "description": description,
                "doc_id": f"{qid}-{i:02d}",
                "title": title,
                "text": text,
                "grade": int(grade),
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def ensure_demo(*, db: Database) -> bool:
    """Create the demo users, collection and tasks unless they exist. True if created now."""
    from app.collections import service as collections
    from app.tasks import service as tasks
    from app.users import service as users

    with db.read() as s:
        if s.scalar(select(Collection.id).where(Collection.name == DEMO_COLLECTION)):
            return False
        existing = set(s.scalars(select(User.username)))
    for name, password, role in DEMO_LOGINS:
        if name not in existing:
            # The demo logins are published (README, `serve --demo`): shorter than the policy
            # allows, on purpose, and only ever in a demo database.
            users.create_user(
                db=db,
                username=name,
                password=password,
                role=role,
                enforce_password_policy=False,
            )
    coll = collections.create_collection(
        db=db,
        name=DEMO_COLLECTION,
        description="A small collection written for the heapjudge demo.",
    )
    collections.import_ndjson(db=db, collection_id=coll.id, data=demo_ndjson())
    collections.set_guidelines(db=db, collection_id=coll.id, markdown=DEMO_GUIDELINES)
    plan = [
        ("coffee", "alice", "topk", {"allow_ties": True}),
        ("coffee", "bob", "topk", {"allow_ties": True}),
        ("bike-chain", "alice", "graded", None),
        ("bike-chain", "bob", "topk", {"not_relevant": True}),
        ("sourdough", "alice", "topk", None),
        ("sourdough", "bob", "graded", None),
    ]
    for seed, (qid, who, method, options) in enumerate(plan, start=1):
        tasks.create_task(
            db=db,
            collection_id=coll.id,
            query_id=qid,
            assessor=who,
            method=method,
            k=5,
            seed=seed,
            options=options,
            plan="demo",
        )
    return True
