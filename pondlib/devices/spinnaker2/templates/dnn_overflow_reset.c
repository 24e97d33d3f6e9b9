## The overflow flag of one inference starts at 0 (a layer sets it where DNNSim would raise).
overflow[0] = 0; /* [1]: 1 when an accumulator leaves acc_bits this step */
