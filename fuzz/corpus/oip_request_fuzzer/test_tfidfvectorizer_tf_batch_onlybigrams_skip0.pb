
*tfidfvectorizer_tf_batch_onlybigrams_skip0f07463e3*
XINT32*2
Y