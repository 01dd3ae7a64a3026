"""HEAD's notes (every sentence of the turn) from the new sentence-keyed ones: the paired baseline."""
from lastknown_graph.pipeline import user_words, answer_context as ac
from lastknown_graph.domain.sentences import sentences
_new = user_words.ended_notes
def old_ended_notes(store, user_id, history, message_ids):
    new = _new(store, user_id, history, message_ids)
    by_msg = {}
    for (mid, _), notes in new.items():
        for n in notes:
            if n not in by_msg.setdefault(mid, []): by_msg[mid].append(n)
    out = {}
    texts = {}
    for mid, notes in by_msg.items():
        out.update({(mid, i): list(notes) for i in range(200)})
    return out
def use_old(flag):
    ac.ended_notes = old_ended_notes if flag else _new
