Bxj
locationweights.binp