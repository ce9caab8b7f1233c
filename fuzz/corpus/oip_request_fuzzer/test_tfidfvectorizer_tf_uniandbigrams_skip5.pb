
&tfidfvectorizer_tf_uniandbigrams_skip5e340f7e0*
XINT32*2
Y