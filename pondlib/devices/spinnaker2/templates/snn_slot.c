## The ring slot of this tick: every population reads (and clears) slot tick mod $slots of its input rings.
/* ring slot of this tick: $slots slots (delays 0..$max_delay, plus this tick and the next) */
const int32_t slot = (int32_t)(tick[0] % $slots);
