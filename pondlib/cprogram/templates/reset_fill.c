## Reset of a state buffer $buf[$count] whose elements all start at $value (a C literal of its type).
for (int32_t i = 0; i < $count; ++i) a->$buf[i] = $value; /* $buf[$count] */
