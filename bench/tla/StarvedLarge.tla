---------------------------- MODULE StarvedLarge ----------------------------
(* instances/starved_large.sq written by hand in TLA+, abstracted: a pool of
   4 blocks; two chats that loop (the user replies, the request queues, an
   iteration admits it and prefills it, the next decodes it and releases its
   2 blocks) and a large request that needs all 4 blocks. Priority = TRUE:
   the chats rank first in the queue and a later one passes a head that
   does not fit (`queue (desc pr, arrived); hol skip`); FALSE: first come,
   first served (`queue (arrived); hol block`). One iteration serves the
   residents (a running request ends and releases), then admits from the
   queue in order what fits. Fairness: the iterations and the arrivals are
   weakly fair, and a behaviour does not stop while an action is enabled;
   a user's reply has no fairness of its own. bench/tla/README.md. *)
EXTENDS Naturals, Sequences

CONSTANT Priority
VARIABLES phase, queue, free
vars == <<phase, queue, free>>

Chats == {"c1", "c2"}
S == Chats \cup {"big"}
Need(s) == IF s = "big" THEN 4 ELSE 2
InQueue(s) == \E i \in 1..Len(queue) : queue[i] = s

(* where s enters the queue: behind every session of its priority or a higher one *)
Enqueue(q, s) ==
  IF ~Priority \/ s = "big" THEN Append(q, s)
  ELSE LET k == CHOOSE k \in 0..Len(q) :
                  /\ \A i \in 1..k : q[i] /= "big"
                  /\ (k = Len(q) \/ q[k + 1] = "big")
       IN SubSeq(q, 1, k) \o <<s>> \o SubSeq(q, k + 1, Len(q))

Init == phase = [s \in S |-> "out"] /\ queue = <<>> /\ free = 4

Arrive(s) ==
  /\ phase[s] = "out"
  /\ IF s = "big" THEN phase' = [phase EXCEPT ![s] = "queued"] /\ queue' = Enqueue(queue, s)
                  ELSE phase' = [phase EXCEPT ![s] = "turn"] /\ UNCHANGED queue
  /\ UNCHANGED free

Reply(c) ==
  /\ phase[c] = "turn"
  /\ phase' = [phase EXCEPT ![c] = "queued"]
  /\ queue' = Enqueue(queue, c)
  /\ UNCHANGED free

(* the admissions of one iteration, from `f` free blocks: the queue's
   sessions in order; under hol block the first that does not fit stops it *)
RECURSIVE Admit(_, _)
Admit(q, f) ==
  IF q = <<>> THEN <<{}, <<>>, f>>
  ELSE IF Need(Head(q)) <= f
       THEN LET r == Admit(Tail(q), f - Need(Head(q))) IN <<r[1] \cup {Head(q)}, r[2], r[3]>>
       ELSE IF Priority
            THEN LET r == Admit(Tail(q), f) IN <<r[1], <<Head(q)>> \o r[2], r[3]>>
            ELSE <<{}, q, f>>

Cardinality0(T) == IF T = {} THEN 0 ELSE IF T = Chats THEN 2 ELSE 1  (* T \subseteq Chats *)

Iterate ==
  LET done == {s \in S : phase[s] = "run"}
      f0 == free + Need("big") * (IF "big" \in done THEN 1 ELSE 0)
                 + 2 * Cardinality0(done \cap Chats)
      r == Admit(queue, f0)
  IN /\ done /= {} \/ r[1] /= {}
     /\ phase' = [s \in S |-> IF s \in r[1] THEN "run"
                              ELSE IF s \in done THEN (IF s = "big" THEN "end" ELSE "turn")
                              ELSE phase[s]]
     /\ queue' = r[2]
     /\ free' = r[3]

Next == Iterate \/ (\E s \in S : Arrive(s)) \/ (\E c \in Chats : Reply(c))

Spec == Init /\ [][Next]_vars /\ WF_vars(Next) /\ WF_vars(Iterate) /\ WF_vars(\E s \in S : Arrive(s))

Admitted == [](InQueue("big") => <>~InQueue("big"))
=============================================================================
