## RequantShift of one element: t = x mul + add exact in $acc (range analysis), then round half up and floor
## shift by $shift (when $shift > 0), then clamp to [$lo, $hi]. $x, $mul, $add: C expressions (element, literal
## or constant entry); $dst: the destination element.
{
##if rounding
    const $acc t = gq_$asr(($acc)$x * ($acc)$mul + ($acc)$add + $half, $shift);
##else
    const $acc t = ($acc)$x * ($acc)$mul + ($acc)$add;
##end
    $dst = ($out_type)(t < $lo ? $lo : (t > $hi ? $hi : t));
}
