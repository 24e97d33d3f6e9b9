## Reset of a state buffer $buf[$count] from one initial value per element ($values: the initializer list).
{ /* $buf[$count]: one initial value per element */
    static const $ctype init_$buf[$count] = $values;
    memcpy(a->$buf, init_$buf, sizeof a->$buf);
}
