"""The window's teaching and replay wiring: the teaching sample cut with the run's merges and
the newest merge explained; the replay timeline shown in the charts, merge list and Tokens.
"""

from __future__ import annotations

import time

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.teaching import SampleCut
from workbench.gui.tokens_tab import tokenizer_of_run as stored_tokenizer
from workbench.store import StoreError

SAMPLE_COST_FACTOR = 4  # between ticks, rebuild the sample's tokenizer after 4x its cost
REPLAY_CUT_SECONDS = 0.5  # a playing replay repaints the Tokens text at most this often
REPLAY_LIST_SECONDS = 0.15  # and the merge list (its greying and scrolling) at most this often


class TeachingAndReplay:
    """Mixed into `MainWindow`: teaching's sample and explanation, and the replay's views."""

    def _show_teaching_sample(self, every_tick: bool = False) -> None:
        """Cut the teaching sample with the merges so far (the run's, read from the store).

        Building the tokenizer costs O(merges) (~0.1 s at 10k), so it is built in the
        background (`sample_lane`, its own store connection; the newest request wins), and
        between teaching ticks it is rebuilt only when the last build is a few of its own
        durations old, so a fast tick rate on a long run never floods the lane.
        """
        if self.run_id is None or not self.teaching.isVisible():
            return
        if not self.warmer.encoder.is_set():  # compiling it here would freeze the window
            self.teaching.newest.setText("The sample is cut once the encoder is ready.")
            return
        now = time.perf_counter()
        last_at, cost = self._sample_built
        if every_tick and now - last_at < SAMPLE_COST_FACTOR * cost:
            return
        self._sample_built = (now, cost)  # the cost is the last build's until this one ends
        db_path, run_id = self.db_path, self.run_id

        teaching = self.teaching

        def build() -> tuple[int, SampleCut, float]:
            started = time.perf_counter()
            tok = stored_tokenizer(db_path, run_id)[0]
            cut = teaching.prepare(tok, _newest_pair(tok))  # encoding the sample: here too
            return run_id, cut, time.perf_counter() - started

        self.sample_lane.submit(build)

    def _on_sample_tokenizer(self, result: tuple[int, SampleCut, float]) -> None:
        run_id, cut, cost = result
        self._sample_built = (self._sample_built[0], cost)
        if run_id != self.run_id or not self.teaching.isVisible():
            return  # another run since, or the panel hidden meanwhile
        if self.replay.clock.k < self.replay.clock.total:
            return  # a replay is under way: teaching follows its merge k, not the newest
        self.teaching.apply(cut)
        self._explain_newest(len(cut.tok.merges))

    def _explain_newest(self, n: int) -> None:
        """Teaching's "why": the newest merge's count, ties and rule, and the next merge."""
        if self.run_id is None or n <= 0:
            self.teaching.explain(None, None, "")
            return
        try:
            around = self.store.merges(self.run_id, after_rank=n - 2, limit=2)
            rule = str(self.store.get_run(self.run_id).settings.get("tie_break", "lexicographic"))
        except StoreError:
            return
        newest = next((m for m in around if m.rank == n - 1), None)
        following = next((m for m in around if m.rank == n), None)
        self.teaching.explain(newest, following, rule)

    _replay_cut_at = 0.0  # when a playing replay last asked for a re-cut of the Tokens text
    _replay_taught_at = 0.0  # ... last moved teaching to its k
    _replay_list_at = 0.0  # ... last moved the merge list

    def _replay_at(self, k: int) -> None:
        """The timeline shows the run after its first k merges, in every view of it.

        While it plays, only the charts' markers move every frame. The other views cost this
        thread a turn each: the Tokens cut's answer ~10-20 ms (colouring the visible lines,
        laying out the strip), teaching's sample and explanation ~5 ms, the merge list's
        repaint ~7-10 ms (its model's `data` for every visible cell). So each frame moves at
        most one of them, each at its own pace, and their answers seldom share a turn. At rest
        (a seek, the end) every view follows at once."""
        total = self.replay.clock.total
        at = None if k >= total else k
        if at is not None:
            self.tokens.need()  # an opened run's tokenizer, put off until something needs it
        self.charts.show_replay(at)
        panel = self.tokens.panel
        cuts = panel.run_id is not None and panel.run_id == self.run_id
        if not self.replay.playing:
            if cuts:
                panel.show_rank(k)
                self._teach_replayed(k)
            self.merge_list.show_replay(at)
            return
        now = time.perf_counter()
        if cuts and now - self._replay_cut_at >= REPLAY_CUT_SECONDS:
            self._replay_cut_at = now
            panel.show_rank(k)
        elif cuts and now - self._replay_taught_at >= REPLAY_CUT_SECONDS:
            self._replay_taught_at = now
            self._teach_replayed(k)
        elif now - self._replay_list_at >= REPLAY_LIST_SECONDS and not (cuts and panel.painting()):
            # Not while the Tokens tab paints a cut: the list's repaint and a cut's answer
            # or colouring slices between the same two ticks made the replay's longest turns.
            self._replay_list_at = now
            self.merge_list.show_replay(at)

    def _teach_replayed(self, k: int) -> None:
        """Teaching follows the timeline: merge k is the newest, explained at once, and marked
        in the sample cut by the first k merges (in `replay_lane`: the newest k wins)."""
        if not self.teaching.isVisible():
            return
        base = self.tokens.panel.base_tokenizer
        if base is None or k > len(base.merges):
            return
        self._explain_newest(k)
        teaching, run_id = self.teaching, self.run_id

        def cut() -> tuple[int | None, SampleCut]:
            tok = base if k == len(base.merges) else base.prefix(k)
            return run_id, teaching.prepare(tok, _newest_pair(tok))

        self.replay_lane.submit(cut)

    def _on_replay_cut(self, result: tuple[int | None, SampleCut]) -> None:
        run_id, sample = result
        if run_id == self.run_id:
            self.teaching.apply(sample)

    def _end_replay(self) -> None:
        """Training or another run: the timeline starts over at the whole run."""
        if self.replay.clock.k < self.replay.clock.total:
            self._replay_at(self.replay.clock.total)
        self.replay.set_total(0)

    def _offer_replay(self) -> None:
        """A run at rest (paused, finished, opened) can be replayed over all its merges."""
        total = self.merges_done if self.mode in ("paused", "finished") else 0
        if total != self.replay.clock.total:
            if self.replay.clock.k < self.replay.clock.total:
                self._replay_at(self.replay.clock.total)
            self.replay.set_total(total)


def _newest_pair(tok: Tokenizer) -> tuple[bytes, bytes] | None:
    """The (left, right) bytes of `tok`'s last merge (None: no merges)."""
    merges = tok.merges
    return (tok.vocab[merges[-1][0]], tok.vocab[merges[-1][1]]) if merges else None
