## Reset of a state buffer $buf[$count] whose elements all start at 0.
memset(a->$buf, 0, sizeof a->$buf); /* $buf[$count] = 0 */
